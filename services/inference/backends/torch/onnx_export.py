"""The torch backend's ONNX exporter, named by its config.py (``onnx_export``) and called by
services/inference/backends/convert.py: the model is built by the torch backend itself, so the ONNX
file holds exactly what it benchmarks (same seeded weights, same checksum checks on
weights and TorchScript files)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from services.core.manifest import ModelManifest

# Large enough for the dynamic batch axis not to be specialised by a batch of 1.
_EXAMPLE_BATCH = 2


def export_onnx(manifest: ModelManifest, path: Path, *, opset: int, exporter: str) -> str:
    """Write ``manifest``'s model to ``path`` with a dynamic batch axis; the converter's
    description ("torch <version> (<exporter> exporter)")."""
    import torch

    from services.inference.backend_interface import BackendOptions
    from services.inference.backends.torch.backend import TorchBackend

    torch_backend = TorchBackend(BackendOptions(device="cpu"))
    torch_backend.load(manifest)
    first = manifest.inputs[0]
    example = torch.zeros((_EXAMPLE_BATCH, *first.shape), dtype=getattr(torch, first.element_type))
    _export(torch_backend.model, example, path, manifest, opset, exporter)
    return f"torch {torch.__version__} ({exporter} exporter)"


def _export(
    model: Any, example: Any, path: Path, manifest: ModelManifest, opset: int, exporter: str
) -> None:
    import torch

    input_names = [i.layer_name for i in manifest.inputs[:1]]
    output_names = [o.layer_name for o in manifest.outputs[:1]]
    with torch.no_grad(), warnings.catch_warnings():
        if exporter == "torchscript":
            # The TorchScript exporter is deprecated in favour of dynamo, but it is the one
            # that writes the opset asked for (dynamo implements opset >= 18 only) and it
            # exports a CNN in a fraction of the time.
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                model,
                (example,),
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=input_names,
                output_names=output_names,
                dynamic_axes={name: {0: "batch"} for name in (*input_names, *output_names)},
            )
        else:
            batch = torch.export.Dim("batch", min=1, max=4096)
            program = torch.onnx.export(
                model,
                (example,),
                dynamo=True,
                opset_version=opset,
                external_data=False,
                input_names=input_names,
                output_names=output_names,
                dynamic_shapes=({0: batch},),
            )
            assert program is not None
            program.save(str(path), external_data=False)
