"""Write an ONNX brick into a suite: its description first, the ``.onnx`` file last (a
brick file present means its description is too), each checked by onnx's checker."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from services.workloads.bricks.extract_onnx import brick_onnx
from services.workloads.bricks.parse_onnx import ParsedOnnxModel
from services.workloads.bricks.signature import BrickError, LayerSequence


def write_onnx_brick(parsed: ParsedOnnxModel, sequence: LayerSequence, folder: Path) -> None:
    model = brick_onnx(parsed, sequence)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # ValidationError or InferenceError: the layers are named
        types = ", ".join(parsed.layers[i].type for i in sequence.layers)
        raise BrickError(
            f"model: {parsed.name}: the layers [{types}] do not make a valid ONNX brick: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        ) from exc
    (folder / f"{sequence.signature}.json").write_text(
        json.dumps({"signature": sequence.signature, **sequence.description}, indent=1)
    )
    partial = folder / f"{sequence.signature}.partial"
    partial.write_bytes(model.SerializeToString())
    partial.replace(folder / f"{sequence.signature}.onnx")
