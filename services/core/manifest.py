"""The model manifest: a declarative, code-free description of a model to benchmark.

A manifest names the model (semantic version), the framework and the versions it needs,
its inputs with named and parameterised preprocessing steps, its outputs with
post-processing, where the model comes from (a builtin architecture or a file with a
required sha256) and attributes such as the training dataset and reference accuracy.
Those sections are services/core/manifest_sections.py; this module assembles them into
ModelManifest, loads it from YAML, reports its faults by field path and checks its files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from services.core.manifest_sections import (
    BUILTIN_LABELS,
    Attributes,
    Fidelity,
    Framework,
    Input,
    ModelFile,
    Output,
    Source,
    StrictModel,
    TopKStep,
)
from shared.bounded_yaml import YamlLimits, YamlRefused, load_bounded

# Semantic Versioning 2.0.0, the official grammar.
SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class ManifestError(ValueError):
    """A manifest problem, one line per fault, each naming the field path."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        self.problems = problems
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__("\n".join(prefix + p for p in problems))


class ModelManifest(StrictModel):
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
