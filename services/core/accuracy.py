"""Accuracy of an AccuracyOnly run: the model's outputs scored against the dataset's labels.

Scoring follows the manifest's post-processing: the ``top_k`` step's k, and its labels
file mapping class index -> label. With a labels file, a sample is correct when the
predicted label equals its class folder's name, so a dataset whose folders sort in
another order than the model's classes is still scored right. Without one, the sorted
folder index is the class index; the report then warns when the folders cannot be the
model's classes in order (see ``labels.class_folder_warnings``), and any run warns when
top-1 is no better than chance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from services.core.labels import (
    LabelsError,
    TopK,
    chance_level_warning,
    class_folder_warnings,
)
from services.core.metrics import AccuracyReport


def _truth_indices(
    labels: Sequence[int | None], class_names: Sequence[str], top_k: TopK
) -> list[tuple[int, int, str]]:
    """(sample index, true class index in the model's order, class name) per labelled sample."""
    mapping: dict[int, int] = {}
    if top_k.labels is not None and class_names:
        position = {name: i for i, name in enumerate(top_k.labels)}
        for folder_index, name in enumerate(class_names):
            if name not in position:
                raise LabelsError(
                    f"dataset: class folder {name!r} is not a label in {top_k.field}; "
                    f"accepted folder names: the labels file's lines, e.g. {top_k.labels[:3]}"
                )
            mapping[folder_index] = position[name]
    scored = []
    for index, label in enumerate(labels):
        if label is None:
            continue
        name = class_names[label] if label < len(class_names) else str(label)
        scored.append((index, mapping.get(label, label), name))
    return scored


def score(
    outputs: Mapping[int, np.ndarray],
    labels: Sequence[int | None],
    top_k: TopK,
    class_names: Sequence[str] = (),
) -> AccuracyReport:
    """Top-1 and top-5 in percent over every labelled sample.

    A labelled sample without an output (its batch failed) counts as wrong: leaving it out
    would raise the accuracy of a model that crashes on hard inputs.
    """
    classes = {np.asarray(o).size for o in outputs.values()}
    if top_k.labels is not None and classes and classes != {len(top_k.labels)}:
        # Checked first: with the wrong number of labels every other message would mislead.
        raise LabelsError(
            f"{top_k.field}: {len(top_k.labels)} labels but the model outputs "
            f"{', '.join(map(str, sorted(classes)))} classes"
        )
    scored = _truth_indices(labels, class_names, top_k)
    if not scored:
        raise ValueError("dataset: accuracy needs labelled samples (one sub-folder per class)")
    depth = max(top_k.k, 5)
    top1 = top5 = missing = 0
    per_class: dict[str, int] = {}
    for index, truth, name in scored:
        output = outputs.get(index)
        if output is None:
            missing += 1
            continue
        scores = np.asarray(output).reshape(-1)
        # Ranked on the raw outputs: softmax is monotonic, and ranking after it could only
        # add float32 rounding ties. Stable sort: ties break to the lower class index.
        ranked = np.argsort(-scores, kind="stable")[:depth]
        hit = int(ranked[0] == truth)
        top1 += hit
        top5 += int(truth in ranked[:5])
        per_class[name] = per_class.get(name, 0) + hit
    n = len(scored)
    output_classes = next(iter(classes)) if len(classes) == 1 else None
    warnings = class_folder_warnings(class_names, top_k, output_classes)
    chance = chance_level_warning(100.0 * top1 / n, output_classes or 0, n)
    if chance is not None:
        warnings.append(chance)
    return AccuracyReport(
        sample_count=n,
        top1=100.0 * top1 / n,
        top5=100.0 * top5 / n if top_k.k >= 5 else None,
        per_class_correct=dict(sorted(per_class.items())),
        missing_outputs=missing,
        warnings=warnings,
    )
