"""What each manifest step takes and gives, and the walk that checks a list of steps as a
pipeline: every step must take what the step before it gave.

The types follow what services/preprocess/decode.py and .ops do with a batch: ``decode``
turns a file into an image of 8-bit pixels, height x width x channels (HWC); ``resize``
and ``center_crop`` work on those pixels (Pillow and torch's 8-bit kernel cannot resize
float32 pixels: "Cannot handle this data type"); ``normalize`` turns HWC values into a
float32 tensor; ``layout`` fixes the axis order once (a second one would transpose the
channels-first tensor again); ``cast`` changes only the element type. After the model,
``softmax`` turns scores into probabilities and ``top_k`` either into classes, after which
nothing is left to post-process.

A refusal names the step's field and what it takes and got, e.g.
``inputs[0].steps[2] (resize): takes an image (uint8, HWC), gets a tensor (float32, HWC)
after normalize``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from services.core.manifest_sections import (
    CastStep,
    DecodeStep,
    Input,
    LayoutStep,
    Output,
)


@dataclass(frozen=True)
class Data:
    """What flows between two steps."""

    kind: str  # "file", "image", "tensor", "scores", "probabilities", "classes"
    dtype: str = ""  # element type where one is known ("uint8", "float32" ...)
    layout: str = ""  # "HWC" or "CHW" for pixels and tensors
    laid_out: bool = False  # a layout step has fixed the axis order
    after: str = "the model"  # the step that gave it, for the message

    def describe(self) -> str:
        details = ", ".join(part for part in (self.dtype, self.layout) if part)
        article = "an" if self.kind[0] in "aeiou" else "a"
        return f"{article} {self.kind}" + (f" ({details})" if details else "")


@dataclass(frozen=True)
class StepType:
    """``takes``: what the step accepts, in words; ``accepts``: whether it takes ``data``;
    ``gives``: what it turns ``data`` into, from its parameters."""

    takes: str
    accepts: Callable[[Data], bool]
    gives: Callable[[Data, Any], Data]


def _pixels(data: Data) -> bool:
    return data.kind == "image" and data.dtype == "uint8" and data.layout == "HWC"


def _channels_last(data: Data) -> bool:
    return data.kind in ("image", "tensor") and data.layout == "HWC"


def _not_laid_out(data: Data) -> bool:
    return _channels_last(data) and not data.laid_out


def _decoded(_data: Data, _step: DecodeStep) -> Data:
    return Data("image", "uint8", "HWC", after="decode")


def _laid_out(data: Data, step: LayoutStep) -> Data:
    order = "CHW" if step.order == "NCHW" else "HWC"
    return Data("tensor", data.dtype, order, laid_out=True, after="layout")


def _cast(data: Data, step: CastStep) -> Data:
    return replace(data, dtype=step.element_type, after="cast")


def _same_pixels(name: str) -> Callable[[Data, Any], Data]:
    return lambda data, _step: replace(data, after=name)


# Every registered step (services/core/manifest_sections.PREPROCESS_STEP_NAMES and the
# post-processing ones) declares here what it takes and gives.
PREPROCESS_TYPES: dict[str, StepType] = {
    "decode": StepType("an image file", lambda d: d.kind == "file", _decoded),
    "resize": StepType("an image (uint8, HWC)", _pixels, _same_pixels("resize")),
    "center_crop": StepType("an image (uint8, HWC)", _pixels, _same_pixels("center_crop")),
    "normalize": StepType(
        "an image or tensor (HWC)",
        _channels_last,
        lambda data, _step: Data("tensor", "float32", "HWC", after="normalize"),
    ),
    "layout": StepType(
        "an image or tensor (HWC) not laid out yet (one layout step per input)",
        _not_laid_out,
        _laid_out,
    ),
    "cast": StepType("an image or tensor", lambda d: d.kind in ("image", "tensor"), _cast),
}
POSTPROCESS_TYPES: dict[str, StepType] = {
    "softmax": StepType(
        "the model's scores",
        lambda d: d.kind == "scores",
        lambda _data, _step: Data("probabilities", "float32", after="softmax"),
    ),
    "top_k": StepType(
        "the model's scores or probabilities",
        lambda d: d.kind in ("scores", "probabilities"),
        lambda _data, _step: Data("classes", "int64", after="top_k"),
    ),
}


def _walk(where: str, steps: list[Any], start: Data, types: dict[str, StepType]) -> list[str]:
    """The first step that does not take what the one before gives, if any: the steps
    after it would be checked against data no step gives, so they are not reported."""
    data = start
    for j, step in enumerate(steps):
        step_type = types[step.op]
        if not step_type.accepts(data):
            return [
                f"{where}[{j}] ({step.op}): takes {step_type.takes}, gets {data.describe()} "
                f"after {data.after}"
            ]
        data = step_type.gives(data, step)
    return []


def input_pipeline_problems(spec: Input, index: int) -> list[str]:
    """Each of an image input's steps that does not take what the step before it gives."""
    if spec.modality != "image":
        return []  # tensor inputs are fed as they are; no steps to follow
    return _walk(f"inputs[{index}].steps", list(spec.steps), Data("file"), PREPROCESS_TYPES)


def output_pipeline_problems(spec: Output, index: int) -> list[str]:
    """Each post-processing step that does not take what the step before it gives."""
    start = Data("scores", spec.element_type, after="the model")
    return _walk(f"outputs[{index}].steps", list(spec.steps), start, POSTPROCESS_TYPES)
