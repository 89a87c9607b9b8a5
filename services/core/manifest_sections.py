"""A model manifest's sections as pydantic models: inputs with their preprocessing steps,
outputs with their post-processing steps, the framework, the model's source and its
attributes. services/core/manifest.py assembles them into ModelManifest, loads and reports on it.

Steps are written as one-key mappings (``- resize: {size: 256}``) and validated against
a closed set of step types: a manifest can never make a worker execute code.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.frameworks import canonical_framework

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

ElementType = Literal["float32", "float16", "uint8", "int8", "int32", "int64"]
# Names a top_k step may give instead of a labels file: the model's class indices are the
# truth and the dataset's class folders, sorted, must be in the model's class order.
BUILTIN_LABELS = frozenset({"imagenet1k"})
# Bounds on a step's parameters, whoever sends the manifest (the API bounds sizes further,
# by its settings: services/api/bounds.py). No decoder opens an image with a side over
# 65,535 pixels (JPEG's limit); a top_k over 1,000 classes is no accuracy any dataset here
# scores (ImageNet-1k has 1,000), and k sorts k entries per sample; a pixel has at most 4
# channels; an input of more than 8 dimensions is no model's.
MAX_SIDE = 65_535
MAX_TOP_K = 1_000
MAX_CHANNELS = 4
MAX_DIMENSIONS = 8
# More steps than any pipeline needs: each is a pass over every sample.
MAX_STEPS = 32


class StrictModel(BaseModel):
    # Infinity and NaN are never a size, a mean or a scale, and JSON cannot store them.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def one_key_to_op(value: Any) -> Any:
    """Turn ``{resize: {size: 256}}`` into ``{op: resize, size: 256}`` for the tagged union."""
    if isinstance(value, dict) and "op" not in value and len(value) == 1:
        ((name, params),) = value.items()
        if params is None:
            params = {}
        if isinstance(params, dict):
            return {"op": name, **params}
    if isinstance(value, str):
        return {"op": value}
    return value


# ---------------------------------------------------------------------------------------
# Preprocessing steps
# ---------------------------------------------------------------------------------------
class DecodeStep(StrictModel):
    op: Literal["decode"]
    color_mode: Literal["RGB", "BGR", "L"] = "RGB"


def _side_sizes(v: int | tuple[int, int]) -> int | tuple[int, int]:
    sides = (v,) if isinstance(v, int) else v
    if any(s <= 0 or s > MAX_SIDE for s in sides):
        raise ValueError(f"each side must be positive, at most {MAX_SIDE} pixels")
    return v


class ResizeStep(StrictModel):
    op: Literal["resize"]
    # One int resizes the shorter side when keep_aspect is true, else both sides.
    size: int | tuple[int, int] = Field(description="pixels; int or [height, width]")
    method: Literal["bilinear", "bicubic", "nearest", "lanczos"] = "bilinear"
    keep_aspect: bool = True

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int | tuple[int, int]) -> int | tuple[int, int]:
        return _side_sizes(v)

    def target_size(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) this step turns an image of ``height`` x ``width`` into."""
        if isinstance(self.size, tuple):
            return self.size
        if not self.keep_aspect:
            return self.size, self.size
        # Shorter side to `size`, the other scaled to keep the aspect ratio (torchvision's rule).
        if height <= width:
            return self.size, int(self.size * width / height)
        return int(self.size * height / width), self.size


class CenterCropStep(StrictModel):
    op: Literal["center_crop"]
    size: int | tuple[int, int]

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int | tuple[int, int]) -> int | tuple[int, int]:
        return _side_sizes(v)


class NormalizeStep(StrictModel):
    op: Literal["normalize"]
    # x' = (x / scale - mean) / std, per channel.
    mean: tuple[float, ...] = Field(default=(0.0, 0.0, 0.0), max_length=MAX_CHANNELS)
    std: tuple[float, ...] = Field(default=(1.0, 1.0, 1.0), max_length=MAX_CHANNELS)
    scale: float = Field(default=255.0, gt=0)

    @model_validator(mode="after")
    def _same_length(self) -> NormalizeStep:
        if len(self.mean) != len(self.std):
            raise ValueError("mean and std must have the same number of channels")
        if any(s == 0 for s in self.std):
            raise ValueError("std must not contain 0")
        return self


class LayoutStep(StrictModel):
    op: Literal["layout"]
    order: Literal["NCHW", "NHWC"] = "NCHW"


class CastStep(StrictModel):
    op: Literal["cast"]
    element_type: ElementType = "float32"


PreprocessStep = Annotated[
    DecodeStep | ResizeStep | CenterCropStep | NormalizeStep | LayoutStep | CastStep,
    Field(discriminator="op"),
]
PREPROCESS_STEP_NAMES = ("decode", "resize", "center_crop", "normalize", "layout", "cast")


# ---------------------------------------------------------------------------------------
# Post-processing steps
# ---------------------------------------------------------------------------------------
class SoftmaxStep(StrictModel):
    op: Literal["softmax"]


class TopKStep(StrictModel):
    op: Literal["top_k"]
    k: int = Field(default=5, ge=1, le=MAX_TOP_K)
    # A labels file (one label per line), relative to the manifest, or a builtin name.
    labels: str | None = None


PostprocessStep = Annotated[SoftmaxStep | TopKStep, Field(discriminator="op")]


Fidelity = Literal["reference", "fast"]
FIDELITIES: tuple[Fidelity, ...] = ("reference", "fast")
DEFAULT_FIDELITY: Fidelity = "reference"


def as_fidelity(value: str) -> Fidelity:
    """``value`` as one of FIDELITIES; ValueError otherwise."""
    for fidelity in FIDELITIES:
        if value == fidelity:
            return fidelity
    raise ValueError(f"{value!r} is not accepted; accepted: {', '.join(FIDELITIES)}")


def stored_fidelity(manifest: dict[str, Any]) -> str:
    """The first input's fidelity in a stored manifest (ModelManifest.to_dict()), its
    default when unset."""
    inputs = manifest.get("inputs") or [{}]
    return str(inputs[0].get("fidelity", DEFAULT_FIDELITY))


class Input(StrictModel):
    modality: Literal["image", "tensor"] = "image"
    layer_name: str = "input"
    element_type: ElementType = "float32"
    # Per-sample shape, without the batch dimension, in the final layout.
    shape: tuple[int, ...] = Field(max_length=MAX_DIMENSIONS)
    steps: list[PreprocessStep] = Field(default_factory=list, max_length=MAX_STEPS)
    # "reference": the same bits as torchvision's PIL pipeline (Resize, CenterCrop,
    # ToTensor, Normalize). "fast": JPEGs decoded by libjpeg-turbo through simplejpeg to
    # the reference's pixels (the same settings and DCT scale), bilinear resizes by
    # torch's 8-bit SIMD kernel where torch is installed, only up to the crop; its pixels
    # are at most one level from the reference's (benchmarks/preprocess_throughput.py
    # prints by how much, and whether top-5 classes change). An embedded run on a CUDA
    # device decodes the fast mode's JPEGs there, by nvJPEG (preprocess/device_decode.py).
    fidelity: Fidelity = DEFAULT_FIDELITY

    @field_validator("steps", mode="before")
    @classmethod
    def _normalise_steps(cls, v: Any) -> Any:
        return [one_key_to_op(s) for s in v] if isinstance(v, list) else v

    @field_validator("shape")
    @classmethod
    def _positive_dims(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(d <= 0 for d in v):
            raise ValueError("must be a non-empty list of positive integers")
        return v

    @model_validator(mode="after")
    def _image_steps_are_ordered(self) -> Input:
        if self.modality == "image":
            ops = [s.op for s in self.steps]
            if not ops or ops[0] != "decode":
                raise ValueError("an image input's first step must be 'decode'")
        return self

    @property
    def layout(self) -> str:
        for step in self.steps:
            if isinstance(step, LayoutStep):
                return step.order
        return "NCHW"


class Output(StrictModel):
    modality: Literal["classification", "tensor"] = "classification"
    layer_name: str = "output"
    element_type: ElementType = "float32"
    steps: list[PostprocessStep] = Field(default_factory=list, max_length=MAX_STEPS)

    @field_validator("steps", mode="before")
    @classmethod
    def _normalise_steps(cls, v: Any) -> Any:
        return [one_key_to_op(s) for s in v] if isinstance(v, list) else v


class Framework(StrictModel):
    # One of the backends' names (or an alias one declares, e.g. "pytorch").
    name: str
    # PEP 440 specifier, e.g. ">=2.1,<3"; empty accepts every version.
    version: str = ""

    @field_validator("name", mode="before")
    @classmethod
    def _known_backend(cls, v: Any) -> Any:
        # The backends' folders are the only list of frameworks (each config.py is
        # import-light); their registry provides it (shared/frameworks.py).
        if not isinstance(v, str):
            return v
        return canonical_framework(v)

    @field_validator("version")
    @classmethod
    def _specifier(cls, v: str) -> str:
        try:
            SpecifierSet(v)
        except InvalidSpecifier as exc:
            raise ValueError(f"{v!r} is not a version constraint such as '>=2.1,<3'") from exc
        return v

    def accepts(self, version: str) -> bool:
        return SpecifierSet(self.version).contains(version, prereleases=True)


class ModelFile(StrictModel):
    path: str | None = None
    url: str | None = None
    sha256: str

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        if not SHA256_RE.match(v):
            raise ValueError("must be 64 lowercase hexadecimal characters")
        return v

    @model_validator(mode="after")
    def _one_location(self) -> ModelFile:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of 'path' or 'url'")
        return self


class Source(StrictModel):
    # A builtin architecture such as "torchvision:resnet50" or "keras:ResNet50";
    # built with random weights unless 'weights' is given.
    architecture: str | None = None
    weights: ModelFile | None = None
    # A complete model file (TorchScript, ONNX, SavedModel archive, .keras ...).
    file: ModelFile | None = None

    @field_validator("architecture")
    @classmethod
    def _namespaced(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[a-z_]+:[A-Za-z0-9_.]+$", v):
            raise ValueError("must look like 'zoo:name', e.g. 'torchvision:resnet50'")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Source:
        if (self.architecture is None) == (self.file is None):
            raise ValueError("give exactly one of 'architecture' or 'file'")
        if self.weights is not None and self.architecture is None:
            raise ValueError("'weights' needs an 'architecture' to load into")
        return self


class Attributes(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)
    training_dataset: str | None = None
    top1: float | None = Field(default=None, ge=0, le=100)
    top5: float | None = Field(default=None, ge=0, le=100)
    licence: str | None = None

    @model_validator(mode="after")
    def _finite_extras(self) -> Attributes:
        # Free-form attributes are stored as JSON, which has no Infinity or NaN.
        for key, value in (self.model_extra or {}).items():
            where = _non_finite_at(value)
            if where is not None:
                raise ValueError(f"{key}{where}: must be a finite number")
        return self


def _non_finite_at(value: Any) -> str | None:
    """Where inside ``value`` a non-finite float sits ("" for value itself), else None."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}", v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
    return None
