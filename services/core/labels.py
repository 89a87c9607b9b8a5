"""Labels files (one class label per line) named by a manifest's ``top_k`` step.

A labels file decides what "correct" means, so a damaged one must stop an accuracy run
before it starts, with the manifest field at fault and the line that is wrong.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.core.manifest import ModelManifest
from services.core.manifest_sections import BUILTIN_LABELS, TopKStep

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


def class_folder_warnings(
    class_names: Sequence[str], top_k: TopK, output_classes: int | None
) -> list[str]:
    """Reasons to doubt that the dataset's class folders name the model's classes.

    With a labels file, folders are matched by name and a folder that is no label stops the
    run (see ``accuracy.score``). Without one, the k-th folder in sorted order is scored as
    class k: a dataset holding some of the classes, or folders that sort in another order,
    is scored against the wrong classes and reads as a near-zero top-1 with no error.
    """
    if top_k.labels is not None or not class_names:
        return []
    warnings = []
    fix = f"name a labels file in {top_k.field} so folders are matched by name"
    if output_classes is not None and len(class_names) != output_classes:
        warnings.append(
            f"dataset: {len(class_names)} class folders but the model outputs "
            f"{output_classes} classes, and without a labels file the k-th folder in sorted "
            f"order is scored as class k; {fix}"
        )
    # Folders named by class index ("0".."9") must sit at that index once sorted as text.
    misplaced = [
        (name, index)
        for index, name in enumerate(class_names)
        if name.isdigit() and int(name) != index
    ]
    if misplaced:
        shown = ", ".join(f"{name!r} as class {index}" for name, index in misplaced[:3])
        more = f" and {len(misplaced) - 3} more" if len(misplaced) > 3 else ""
        warnings.append(
            f"dataset: class folders named by number are scored by sorted position: "
            f"{shown}{more}; {fix}"
        )
    return warnings


def chance_level_warning(top1: float, classes: int, samples: int) -> str | None:
    """A top-1 no better than guessing, over enough samples to tell, is worth a word."""
    chance = 100.0 / classes if classes > 0 else 0.0
    if classes < 2 or samples < classes or top1 > chance:
        return None
    return (
        f"accuracy: top-1 {top1:.2f} % is at or below chance ({chance:.2f} % for {classes} "
        "classes): check that the class folders match the model's labels and the "
        "preprocessing matches its training"
    )
