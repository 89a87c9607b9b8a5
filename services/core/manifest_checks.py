"""Everything bench checks about a manifest before it runs, in one function.

``benchstack manifest validate`` and ``benchstack bench`` both call ``check_manifest``, so
a manifest that validates is one bench accepts, and both refuse with the same words (the
API checks a manifest a client sends with ``steps_problems``, the same words again):
- the builtin architecture exists in its zoo, and the zoo fits the framework;
- every file the manifest names lies inside the manifest's folder (checked before any
  file is opened: nothing outside the folder is read or hashed);
- each input's and output's steps fit together as a pipeline (services/core/step_types.py), and
  each image input's steps produce the declared shape, worked out from the steps alone;
- optionally, the model files match their sha256.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from services.core.architectures import ZooUnavailable, architecture_problem
from services.core.manifest import ManifestError, ModelManifest, verify_model_files
from services.core.manifest_sections import (
    CenterCropStep,
    DecodeStep,
    Input,
    LayoutStep,
    NormalizeStep,
    ResizeStep,
)
from services.core.step_types import input_pipeline_problems, output_pipeline_problems

# A dimension that depends on the image (e.g. the long side after an aspect-keeping resize).
Dim = int | None


@dataclass
class ManifestCheck:
    """What a passing check found: the files it hashed and what it could not check here."""

    checked_files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def format_shape(shape: tuple[Dim, ...]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def shape_mismatch(index: int, produced: tuple[Dim, ...], declared: tuple[int, ...]) -> str:
    """The one wording for a shape the steps do not produce, statically or at run time."""
    return (
        f"inputs[{index}].shape: the steps produce {format_shape(produced)} per sample, "
        f"the manifest says {format_shape(declared)}; accepted: a shape the steps produce "
        "('?' depends on the image)"
    )


def _agrees(produced: tuple[Dim, ...], declared: tuple[int, ...]) -> bool:
    if len(produced) != len(declared):
        return False
    return all(p is None or p == d for p, d in zip(produced, declared, strict=True))


def produced_shape(spec: Input, index: int = 0) -> tuple[tuple[Dim, ...], list[str]]:
    """The per-sample shape an image input's steps produce, and any size that cannot work.

    Mirrors services.preprocess.decode and .ops: decode gives HWC pixels, resize and
    center_crop change their sides, layout NCHW moves the channels first. Without a layout
    step the batch stays NHWC. Which step may follow which is services/core/step_types.py's walk.
    """
    height: Dim = None
    width: Dim = None
    channels = 3
    channels_first = False
    problems: list[str] = []
    for j, step in enumerate(spec.steps):
        where = f"inputs[{index}].steps[{j}]"
        if isinstance(step, DecodeStep):
            channels = 1 if step.color_mode == "L" else 3
        elif isinstance(step, ResizeStep):
            if isinstance(step.size, tuple) or not step.keep_aspect:
                height, width = step.target_size(1, 1)
            elif height is not None and width is not None:
                height, width = step.target_size(height, width)
            else:
                # The shorter side becomes `size`; which side that is depends on the image.
                height, width = None, None
        elif isinstance(step, CenterCropStep):
            crop_h, crop_w = step.size if isinstance(step.size, tuple) else (step.size,) * 2
            if height is not None and width is not None and (height < crop_h or width < crop_w):
                problems.append(
                    f"{where}: center_crop of {crop_h}x{crop_w} is larger than the "
                    f"{height}x{width} image the steps before produce; accepted: a crop "
                    "no larger than the resize"
                )
            height, width = crop_h, crop_w
        elif isinstance(step, NormalizeStep):
            if len(step.mean) != channels:
                problems.append(
                    f"{where}: normalize has {len(step.mean)} mean values for {channels} "
                    f"channel(s) after decode; accepted: {channels} mean and std values"
                )
        elif isinstance(step, LayoutStep):
            channels_first = step.order == "NCHW"
    shape = (channels, height, width) if channels_first else (height, width, channels)
    return shape, problems


def shape_problems(manifest: ModelManifest) -> list[str]:
    problems: list[str] = []
    for index, spec in enumerate(manifest.inputs):
        if spec.modality != "image":
            continue  # tensor inputs are fed as they are; no steps to follow
        produced, step_problems = produced_shape(spec, index)
        problems.extend(step_problems)
        if not _agrees(produced, spec.shape):
            problems.append(shape_mismatch(index, produced, spec.shape))
    return problems


def steps_problems(manifest: ModelManifest) -> list[str]:
    """The steps checked as pipelines (each takes what the one before gives), then the
    shapes they produce: what the API checks of a manifest a client sends, as bench does.
    A shape is only worked out from steps that fit together."""
    pipeline = [
        *(p for i, spec in enumerate(manifest.inputs) for p in input_pipeline_problems(spec, i)),
        *(p for i, spec in enumerate(manifest.outputs) for p in output_pipeline_problems(spec, i)),
    ]
    return pipeline or shape_problems(manifest)


def _architecture(manifest: ModelManifest, notes: list[str]) -> list[str]:
    spec = manifest.source.architecture
    if spec is None:
        return []
    try:
        problem = architecture_problem(spec, manifest.framework.name)
    except ZooUnavailable as exc:
        # Not a fault of the manifest: it may be meant for a machine that has the library.
        notes.append(str(exc))
        return []
    return [] if problem is None else [problem]


def _confinement(manifest: ModelManifest) -> list[str]:
    named = [(f"{f}.path", m.path) for f, m in manifest.model_files() if m.path is not None]
    problems: list[str] = []
    for field_path, written in [*named, *manifest.labels_files()]:
        try:
            path = manifest.resolve_path(written, field_path)
        except ManifestError as exc:
            problems.extend(exc.problems)
            continue
        if field_path.endswith(".labels") and not path.is_file():
            problems.append(f"{field_path}: labels file not found: {path}")
    return problems


def check_manifest(manifest: ModelManifest, *, hash_files: bool = True) -> ManifestCheck:
    """Every check bench makes before it runs; raises ManifestError listing every fault.

    ``hash_files`` also compares local model files with their sha256 (bench leaves that to
    the backend, which checks the files it loads, so they are hashed once).
    """
    result = ManifestCheck()
    problems = [
        *steps_problems(manifest),
        *_architecture(manifest, result.notes),
        *_confinement(manifest),
    ]
    if problems:
        raise ManifestError(problems, manifest.ref)
    if hash_files:
        result.checked_files = verify_model_files(manifest)
    return result
