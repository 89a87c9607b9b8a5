"""TensorFlow / Keras backend: builtin Keras applications, .keras files and SavedModels.

Inputs are NHWC, as Keras applications expect. ``predict`` runs a ``tf.function`` traced
once for a dynamic batch size, so batches of any size reuse one graph.

Options (``BackendOptions.extra``): ``signature`` = the SavedModel signature to call
(default serving_default); ``seed`` = the seed for builtin random weights (default 0).
Thread counts come from ``BackendOptions`` and can only be set before TensorFlow runs
its first operation in the process; ``describe()`` reports the values in effect.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from services.core.manifest import ModelManifest
from services.inference.backend_interface import Backend, BackendError, BackendUnavailable
from services.inference.backends.tensorflow.sources import (
    DEFAULT_SEED,
    build_keras_application,
    verified_model_path,
)


class TensorFlowBackend(Backend):
    name = "tensorflow"

    def version(self) -> str:
        return str(tf.__version__)

    def load(self, manifest: ModelManifest) -> None:
        if keras.backend.backend() != "tensorflow":
            raise BackendUnavailable(
                f"KERAS_BACKEND: is {keras.backend.backend()!r}; this backend needs 'tensorflow'"
            )
        self._set_threads()
        self.tf_device = self._device()
        first = manifest.inputs[0]
        if first.modality == "image" and first.layout != "NHWC":
            raise BackendError(
                f"inputs[0].steps: layout {first.layout} is not accepted; TensorFlow models "
                "take NHWC (add '- layout: {order: NHWC}')"
            )
        spec = tf.TensorSpec([None, *first.shape], tf.as_dtype(first.element_type))
        self.input_name = first.layer_name
        self.output_name = manifest.outputs[0].layer_name
        self.model_kind = ""
        self.keras_model: Any = None
        with tf.device(self.tf_device):
            call = self._model_call(manifest)
            self._fn = tf.function(call, input_signature=[spec])

    def _set_threads(self) -> None:
        # TensorFlow fixes its thread pools when it starts; later calls raise RuntimeError
        # and the values already in effect stay (describe() reports them, not the request).
        with contextlib.suppress(RuntimeError):
            if self.options.intra_op_threads:
                tf.config.threading.set_intra_op_parallelism_threads(self.options.intra_op_threads)
            if self.options.inter_op_threads:
                tf.config.threading.set_inter_op_parallelism_threads(self.options.inter_op_threads)

    def _device(self) -> str:
        device = self.options.device
        if device == "cpu":
            return "/CPU:0"
        kind, _, index = device.partition(":")
        if kind not in ("cuda", "gpu") or (index and not index.isdigit()):
            raise BackendError(
                f"device: {device!r} is not accepted; accepted: cpu, cuda, cuda:<index>"
            )
        gpus = tf.config.list_physical_devices("GPU")
        if int(index or 0) >= len(gpus):
            raise BackendUnavailable(
                f"device: {device!r} was asked for but TensorFlow sees {len(gpus)} GPU(s)"
            )
        return f"/GPU:{int(index or 0)}"

    def _model_call(self, manifest: ModelManifest) -> Any:
        source = manifest.source
        if source.architecture is not None:
            if source.weights is not None:
                raise BackendError(
                    "source.weights: not supported for keras builtins; ship a .keras file"
                )
            seed = int(self.options.extra.get("seed", DEFAULT_SEED))
            self.model_kind = f"builtin {source.architecture} (random weights, seed {seed})"
            # Kept for the FRAMEWORK profiling pass (profiling/keras_layers.py).
            self.keras_model = build_keras_application(
                source.architecture, manifest.inputs[0].shape, seed
            )
            return self._keras_call(self.keras_model)
        path = verified_model_path(manifest)
        if path.is_file():
            self.model_kind = f".keras file {path.name}"
            # safe_mode refuses Lambda layers and other deserialised Python code.
            self.keras_model = keras.models.load_model(path, compile=False, safe_mode=True)
            return self._keras_call(self.keras_model)
        self.model_kind = f"SavedModel {path.name}"
        return self._signature_call(path)

    @staticmethod
    def _keras_call(model: Any) -> Any:
        def call(x: tf.Tensor) -> tf.Tensor:
            out = model(x, training=False)
            return out[0] if isinstance(out, (list, tuple)) else out

        return call

    def _signature_call(self, path: Path) -> Any:
        loaded = tf.saved_model.load(str(path))
        name = str(self.options.extra.get("signature", "serving_default"))
        if name not in loaded.signatures:
            raise BackendError(
                f"signature: {name!r} is not in {path.name}; "
                f"accepted: {', '.join(loaded.signatures)}"
            )
        signature = loaded.signatures[name]
        inputs = list(signature.structured_input_signature[1])
        outputs = list(signature.structured_outputs)
        self.input_name = self._pick("inputs[0].layer_name", self.input_name, inputs)
        self.output_name = self._pick("outputs[0].layer_name", self.output_name, outputs)
        input_name, output_name = self.input_name, self.output_name

        def call(x: tf.Tensor) -> tf.Tensor:
            return signature(**{input_name: x})[output_name]

        self._loaded = loaded  # keeps the variables alive for the signature
        return call

    @staticmethod
    def _pick(field: str, wanted: str, names: list[str]) -> str:
        # Exporters name tensors as they like ("inputs", "keras_tensor", "output_0"); with a
        # single candidate there is no doubt which one the manifest means.
        if wanted in names:
            return wanted
        if len(names) == 1:
            return names[0]
        raise BackendError(
            f"{field}: {wanted!r} is not in the signature; accepted: {', '.join(names)}"
        )

    def predict(self, batch: np.ndarray) -> np.ndarray:
        with tf.device(self.tf_device):
            out = self._fn(tf.convert_to_tensor(batch))
        return np.asarray(out.numpy())

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "tf_device": self.tf_device,
            "model": self.model_kind,
            "keras_version": keras.__version__,
            "input_name": self.input_name,
            "output_name": self.output_name,
            "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
        }

    def close(self) -> None:
        self.__dict__.pop("_fn", None)
        self.__dict__.pop("_loaded", None)
        keras.backend.clear_session()
