"""The model manifest: a declarative, code-free description of a model to benchmark.

A manifest names the model (semantic version), the framework and the versions it needs,
its inputs with named and parameterised preprocessing steps, its outputs with
post-processing, where the model comes from (a builtin architecture or a file with a
required sha256) and attributes such as the training dataset and reference accuracy.

Steps are written as one-key mappings (``- resize: {size: 256}``) and validated against
a closed set of step types: a manifest can never make a worker execute code.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from shared.bounded_yaml import YamlLimits, YamlRefused, load_bounded
from shared.frameworks import canonical_framework

# Semantic Versioning 2.0.0, the official grammar.
SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

ElementType = Literal["float32", "float16", "uint8", "int8", "int32", "int64"]
# Names a top_k step may give instead of a labels file: the model's class indices are the
# truth and the dataset's class folders, sorted, must be in the model's class order.
BUILTIN_LABELS = frozenset({"imagenet1k"})


class ManifestError(ValueError):
    """A manifest problem, one line per fault, each naming the field path."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = problems
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__("\n".join(prefix + p for p in problems))


class _Strict(BaseModel):
    # Infinity and NaN are never a size, a mean or a scale, and JSON cannot store them.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _one_key_to_op(value: Any) -> Any:
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
class DecodeStep(_Strict):
    op: Literal["decode"]
    color_mode: Literal["RGB", "BGR", "L"] = "RGB"


class ResizeStep(_Strict):
    op: Literal["resize"]
    # One int resizes the shorter side when keep_aspect is true, else both sides.
    size: int | tuple[int, int] = Field(description="pixels; int or [height, width]")
    method: Literal["bilinear", "bicubic", "nearest", "lanczos"] = "bilinear"
    keep_aspect: bool = True

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int | tuple[int, int]) -> int | tuple[int, int]:
        sides = (v,) if isinstance(v, int) else v
        if any(s <= 0 for s in sides):
            raise ValueError("must be positive")
        return v

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


class CenterCropStep(_Strict):
    op: Literal["center_crop"]
    size: int | tuple[int, int]

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int | tuple[int, int]) -> int | tuple[int, int]:
        sides = (v,) if isinstance(v, int) else v
        if any(s <= 0 for s in sides):
            raise ValueError("must be positive")
        return v


class NormalizeStep(_Strict):
    op: Literal["normalize"]
    # x' = (x / scale - mean) / std, per channel.
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    scale: float = Field(default=255.0, gt=0)

    @model_validator(mode="after")
    def _same_length(self) -> NormalizeStep:
        if len(self.mean) != len(self.std):
            raise ValueError("mean and std must have the same number of channels")
        if any(s == 0 for s in self.std):
            raise ValueError("std must not contain 0")
        return self


class LayoutStep(_Strict):
    op: Literal["layout"]
    order: Literal["NCHW", "NHWC"] = "NCHW"


class CastStep(_Strict):
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
class SoftmaxStep(_Strict):
    op: Literal["softmax"]


class TopKStep(_Strict):
    op: Literal["top_k"]
    k: int = Field(default=5, ge=1)
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


class Input(_Strict):
    modality: Literal["image", "tensor"] = "image"
    layer_name: str = "input"
    element_type: ElementType = "float32"
    # Per-sample shape, without the batch dimension, in the final layout.
    shape: tuple[int, ...]
    steps: list[PreprocessStep] = Field(default_factory=list)
    # "reference": the same bits as torchvision's PIL pipeline (Resize, CenterCrop,
    # ToTensor, Normalize). "fast": JPEGs decoded by libjpeg-turbo through simplejpeg to
    # the reference's pixels (the same settings and DCT scale), bilinear resizes by
    # torch's 8-bit SIMD kernel where torch is installed, only up to the crop; its pixels
    # are at most one level from the reference's (benchmarks/preprocess_throughput.py
    # prints by how much, and whether top-5 classes change).
    fidelity: Fidelity = DEFAULT_FIDELITY

    @field_validator("steps", mode="before")
    @classmethod
    def _normalise_steps(cls, v: Any) -> Any:
        return [_one_key_to_op(s) for s in v] if isinstance(v, list) else v

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


class Output(_Strict):
    modality: Literal["classification", "tensor"] = "classification"
    layer_name: str = "output"
    element_type: ElementType = "float32"
    steps: list[PostprocessStep] = Field(default_factory=list)

    @field_validator("steps", mode="before")
    @classmethod
    def _normalise_steps(cls, v: Any) -> Any:
        return [_one_key_to_op(s) for s in v] if isinstance(v, list) else v


class Framework(_Strict):
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


class ModelFile(_Strict):
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


class Source(_Strict):
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


class ModelManifest(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str
    description: str = ""
    framework: Framework
    inputs: list[Input] = Field(min_length=1)
    outputs: list[Output] = Field(min_length=1)
    source: Source
    attributes: Attributes = Attributes()
    # Folder the manifest was read from; relative paths resolve against it. Not serialised.
    base_dir: str | None = Field(default=None, exclude=True)

    @field_validator("version")
    @classmethod
    def _semver(cls, v: str) -> str:
        if not SEMVER_RE.match(v):
            raise ValueError(f"{v!r} is not a semantic version such as '1.0.0'")
        return v

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.version}"

    def resolve_path(self, written: str, field: str = "path") -> Path:
        """Where a file the manifest names lies; ``field`` names it in errors.

        A manifest read from a folder (``base_dir`` set) may name only files inside that
        folder: no absolute path, no '..', no symbolic link leading out; so checking or
        running a manifest never reads, hashes or reports on any other file. A manifest
        with no folder is one the API has already confined to its models folder (and
        written with absolute paths there); its paths are taken as written.
        """
        if not self.base_dir:
            return Path(written).expanduser()
        base = Path(self.base_dir)
        accepted = f"accepted: a path relative to the manifest's folder ({base}) without '..'"
        path = PurePosixPath(written)
        if not written or written.startswith("~") or path.is_absolute() or ".." in path.parts:
            raise ManifestError([f"{field}: {written!r} is not accepted; {accepted}"], self.ref)
        resolved = (base / path).resolve()
        if not resolved.is_relative_to(base.resolve()):
            raise ManifestError(
                [
                    f"{field}: {written!r} leads outside the manifest's folder through a "
                    f"symbolic link; {accepted}"
                ],
                self.ref,
            )
        return resolved

    def model_files(self) -> list[tuple[str, ModelFile]]:
        """(field path, file) for every model file the source names."""
        named = (("source.file", self.source.file), ("source.weights", self.source.weights))
        return [(field, f) for field, f in named if f is not None]

    def labels_files(self) -> list[tuple[str, str]]:
        """(field path, path as written) for every labels file a top_k step names."""
        return [
            (f"outputs[{i}].steps[{j}].labels", step.labels)
            for i, output in enumerate(self.outputs)
            for j, step in enumerate(output.steps)
            if isinstance(step, TopKStep) and step.labels and step.labels not in BUILTIN_LABELS
        ]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def with_fidelity(self, fidelity: Fidelity) -> ModelManifest:
        """This manifest with every input prepared in ``fidelity`` mode: what a submission's
        ``preprocessing`` asks for, stored with its runs so a rerun prepares alike."""
        inputs = [spec.model_copy(update={"fidelity": fidelity}) for spec in self.inputs]
        return self.model_copy(update={"inputs": inputs})


# ---------------------------------------------------------------------------------------
# Loading and error reporting
# ---------------------------------------------------------------------------------------
def _format_loc(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("function-") or part in {"tagged-union"}:
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(manifest)"


def _describe(error: Any) -> str:
    loc = _format_loc(error["loc"])
    kind = error["type"]
    msg = error["msg"]
    if kind == "missing":
        return f"{loc}: required field is missing"
    if kind == "extra_forbidden":
        return f"{loc}: unknown field"
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return (
            f"{loc}: unknown step {ctx.get('tag')!r}; accepted: "
            f"{ctx.get('expected_tags', '').replace(chr(39), '')}"
        )
    if kind == "union_tag_not_found":
        return f"{loc}: a step must be a one-key mapping such as '- resize: {{size: 256}}'"
    msg = msg.removeprefix("Value error, ")
    return f"{loc}: {msg} (got {error.get('input')!r})" if kind != "model_type" else f"{loc}: {msg}"


def parse_manifest(data: Any, source: str = "", base_dir: str | None = None) -> ModelManifest:
    if not isinstance(data, dict):
        raise ManifestError(["(manifest): must be a YAML mapping of fields"], source)
    if base_dir is not None:
        data = {**data, "base_dir": base_dir}
    try:
        return ModelManifest.model_validate(data)
    except ValidationError as exc:
        # Several union members can report the same location; keep each line once.
        problems = list(dict.fromkeys(_describe(e) for e in exc.errors()))
        raise ManifestError(problems, source) from None


def load_manifest(path: str | Path) -> ModelManifest:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ManifestError([f"cannot read file: {exc.strerror}"], str(path)) from None
    return parse_manifest_text(text, source=str(path), base_dir=str(path.resolve().parent))


def parse_manifest_text(
    text: str, source: str = "", base_dir: str | None = None, limits: YamlLimits | None = None
) -> ModelManifest:
    """A manifest from YAML text. Anchors and aliases are refused and the text must stay
    within ``limits`` (YamlLimits' defaults unless given): see shared.bounded_yaml."""
    try:
        data = load_bounded(text, limits or YamlLimits())
    except YamlRefused as exc:
        raise ManifestError([f"(manifest): {exc}"], source) from None
    except yaml.YAMLError as exc:
        raise ManifestError(
            [f"(manifest): not valid YAML: {exc}".replace("\n", " ")], source
        ) from None
    return parse_manifest(data, source, base_dir)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_model_files(manifest: ModelManifest) -> list[Path]:
    """Check every local model file against its sha256; return their resolved paths."""
    problems: list[str] = []
    checked: list[Path] = []
    for field, model_file in manifest.model_files():
        if model_file.url is not None:
            problems.append(
                f"{field}.url: remote model files are not fetched by this version; use 'path'"
            )
            continue
        assert model_file.path is not None
        try:
            # Refused before anything is opened: no file outside the folder is ever hashed.
            path = manifest.resolve_path(model_file.path, f"{field}.path")
        except ManifestError as exc:
            problems.extend(exc.problems)
            continue
        if not path.is_file():
            problems.append(f"{field}.path: file not found: {path}")
            continue
        actual = sha256_of(path)
        if actual != model_file.sha256:
            problems.append(
                f"{field}.sha256: mismatch for {path.name}: manifest says {model_file.sha256}, "
                f"file has {actual}"
            )
            continue
        checked.append(path)
    if problems:
        raise ManifestError(problems, manifest.ref)
    return checked
