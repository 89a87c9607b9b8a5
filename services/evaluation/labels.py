"""Labels files (one class label per line) named by a manifest's ``top_k`` step.

A labels file decides what "correct" means, so a damaged one must stop an accuracy run
before it starts, with the manifest field at fault and the line that is wrong.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from shared.manifest import BUILTIN_LABELS, ModelManifest, TopKStep

__all__ = ["BUILTIN_LABELS", "LabelsError", "TopK", "read_labels", "top_k_of"]


class LabelsError(ValueError):
    """A labels file is missing or damaged; the message names the manifest field."""


@dataclass(frozen=True)
class TopK:
    """The manifest's top-k post-processing, resolved."""

    k: int
    labels: list[str] | None  # None: compare class indices
    field: str  # where the step lives in the manifest, for error messages


def read_labels(path: Path, field: str) -> list[str]:
    """One label per line, UTF-8, no blank, duplicate or control-character lines."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelsError(f"{field}: cannot read labels file {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LabelsError(
            f"{field}: {path.name} is not UTF-8 text (bad byte at offset {exc.start}); "
            "expected one label per line"
        ) from None
    lines = text.splitlines()
    if not lines:
        raise LabelsError(f"{field}: {path.name} is empty; expected one label per line")
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        label = raw.strip()
        if not label:
            raise LabelsError(
                f"{field}: {path.name} line {number} is blank; expected one label per line"
            )
        if any(unicodedata.category(ch) == "Cc" for ch in label):
            raise LabelsError(
                f"{field}: {path.name} line {number} holds control characters "
                f"({label!r}); the file looks corrupted"
            )
        if label in seen:
            raise LabelsError(
                f"{field}: {path.name} line {number} repeats {label!r} "
                f"(first on line {seen[label]}); labels must be unique"
            )
        seen[label] = number
    return [line.strip() for line in lines]


def top_k_of(manifest: ModelManifest) -> TopK:
    """The first output's top_k step (k=5 and class indices when there is none)."""
    for index, step in enumerate(manifest.outputs[0].steps):
        if not isinstance(step, TopKStep):
            continue
        field = f"outputs[0].steps[{index}].labels"
        if step.labels is None or step.labels in BUILTIN_LABELS:
            return TopK(k=step.k, labels=None, field=field)
        path = manifest.resolve_path(step.labels, field)
        if not path.is_file():
            raise LabelsError(
                f"{field}: labels file not found: {path}; accepted: a file relative to the "
                f"manifest or one of {', '.join(sorted(BUILTIN_LABELS))}"
            )
        return TopK(k=step.k, labels=read_labels(path, field), field=field)
    return TopK(k=5, labels=None, field="outputs[0].steps")
