"""A minimal MLServer runtime that serves one ONNX model with onnxruntime.

It runs inside the separate MLServer virtualenv (see ``tests/support/kserve_server.py``),
never inside the project's own environment, so it imports nothing from benchstack.
MLServer finds it through ``"implementation": "onnx_runtime.OnnxRuntimeModel"`` in
model-settings.json, with this folder on PYTHONPATH.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


class OnnxRuntimeModel(MLModel):
    async def load(self) -> bool:
        uri = self.settings.parameters.uri if self.settings.parameters else None
        if not uri:
            raise ValueError("parameters.uri: the path of the .onnx file is required")
        options = ort.SessionOptions()
        # The test machine has two cores shared with pytest; one thread keeps it calm.
        options.intra_op_num_threads = 1
        self._session = ort.InferenceSession(uri, options, providers=["CPUExecutionProvider"])
        self._input_names = [i.name for i in self._session.get_inputs()]
        self._output_names = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {}
        for request_input in payload.inputs:
            if request_input.name not in self._input_names:
                raise ValueError(
                    f"inputs[].name: {request_input.name!r} is not an input of this model; "
                    f"accepted: {', '.join(self._input_names)}"
                )
            feeds[request_input.name] = np.ascontiguousarray(NumpyCodec.decode_input(request_input))
        wanted = [o.name for o in payload.outputs] if payload.outputs else self._output_names
        results = self._session.run(wanted, feeds)
        encoded = [NumpyCodec.encode_output(n, v) for n, v in zip(wanted, results, strict=True)]
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            id=payload.id,
            outputs=encoded,
        )
