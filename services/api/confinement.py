"""What a client may make the workers read: manifests and datasets sent through the API,
confined to the deployment's models and datasets folders.

A manifest sent inline or to registerModel may name no absolute or escaping path and no
remote URL (a worker would read, hash and report on any file of its host), and its sizes
stay within this deployment's limits; a dataset is "synthetic" or a folder inside
``datasets_dir``. Each check names the field and what it accepts.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from services.api.bounds import manifest_size_problems
from services.api.rejections import Rejection
from services.core.architectures import zoo_problem
from services.core.labels import BUILTIN_LABELS
from services.core.manifest import ModelManifest, TopKStep, parse_manifest
from services.core.manifest_checks import steps_problems
from shared.bounded_yaml import YamlLimits
from shared.settings import Settings

# String limits are the column sizes of shared/db (evaluations, models): longer input is
# refused with a typed error, never truncated or sent to SQL.
MAX_DATASET_CHARS = 500  # evaluations.dataset, datasets.spec: String(500)
MAX_NAME_CHARS = 200  # evaluations.model_name, models.name: String(200)
MAX_VERSION_CHARS = 100  # evaluations.model_version, models.version: String(100)
SYNTHETIC = "synthetic"


def relative_inside(value: str) -> PurePosixPath | None:
    """``value`` as a path relative to a folder it cannot leave, or None when it is
    absolute, starts with '~', has a '..' component, names the folder itself, or holds
    control characters or backslashes."""
    if not value or "\\" in value or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return None
    if value.startswith(("/", "~")):
        return None
    path = PurePosixPath(value)
    if not path.parts or ".." in path.parts:
        return None
    return path


_RELATIVE = "a path relative to the models folder (BENCHSTACK_MODELS_DIR) without '..'"


def manifest_yaml_limits(settings: Settings) -> YamlLimits:
    """How much YAML a client may send as a manifest (inline or registerModel)."""
    return YamlLimits(
        max_chars=settings.max_manifest_chars,
        max_depth=settings.max_manifest_depth,
        max_nodes=settings.max_manifest_nodes,
    )


def manifest_problems(manifest: ModelManifest, settings: Settings) -> list[str]:
    """What a manifest sent through the API (inline or registerModel) may not contain:
    absolute or escaping file paths and remote URLs, which would make a worker read, hash
    and report on any file of its host; names longer than their columns; and input
    shapes or resize/crop sizes over this deployment's limits; and steps that do not fit
    together as a pipeline or do not produce the declared shape (the words of bench's
    check: services/core/manifest_checks.steps_problems)."""
    problems = manifest_size_problems(manifest, settings) + steps_problems(manifest)
    if len(manifest.name) > MAX_NAME_CHARS:
        problems.append(f"name: at most {MAX_NAME_CHARS} characters (got {len(manifest.name)})")
    if len(manifest.version) > MAX_VERSION_CHARS:
        problems.append(
            f"version: at most {MAX_VERSION_CHARS} characters (got {len(manifest.version)})"
        )
    for field, model_file in manifest.model_files():
        if model_file.url is not None:
            problems.append(
                f"{field}.url: remote model files are not accepted; accepted: 'path', {_RELATIVE}"
            )
        elif model_file.path is not None and relative_inside(model_file.path) is None:
            problems.append(
                f"{field}.path: {model_file.path!r} is not accepted; accepted: {_RELATIVE}"
            )
    architecture = manifest.source.architecture
    if architecture is not None and (unknown := zoo_problem(architecture)) is not None:
        problems.append(unknown)
    for i, output in enumerate(manifest.outputs):
        for j, step in enumerate(output.steps):
            labels = step.labels if isinstance(step, TopKStep) else None
            if labels and labels not in BUILTIN_LABELS and relative_inside(labels) is None:
                problems.append(
                    f"outputs[{i}].steps[{j}].labels: {labels!r} is not accepted; accepted: "
                    f"{', '.join(sorted(BUILTIN_LABELS))} or {_RELATIVE}"
                )
    return problems


def confine_manifest(
    manifest: ModelManifest, settings: Settings, field: str = "manifest"
) -> ModelManifest | Rejection:
    """Check a manifest that came through the API and anchor its relative file paths in
    ``models_dir``.

    ``base_dir`` is set to ``models_dir``, and the paths are also written out as absolute
    paths under it, because ``base_dir`` is not serialised: the worker reads the stored
    manifest without one, and an absolute path under ``models_dir`` resolves the same way
    whether or not the worker sets a base.
    """
    problems = manifest_problems(manifest, settings)
    if problems:
        return Rejection(
            "InvalidManifest",
            "\n".join(f"{field}: {p}" for p in problems),
            field=field,
            problems=problems,
        )
    root = Path(settings.models_dir).expanduser()
    data = manifest.to_dict()
    for key in ("file", "weights"):
        entry = data["source"].get(key)
        if entry and entry.get("path"):
            entry["path"] = str(root / PurePosixPath(entry["path"]))
    for output in data["outputs"]:
        for step in output.get("steps", []):
            labels = step.get("labels") if step.get("op") == "top_k" else None
            if labels and labels not in BUILTIN_LABELS:
                step["labels"] = str(root / PurePosixPath(labels))
    return parse_manifest(data, source=field, base_dir=str(root))


DATASET_ACCEPTED = [
    SYNTHETIC,
    "a folder relative to the datasets folder (BENCHSTACK_DATASETS_DIR), without '..'",
]


def dataset_spec(settings: Settings, dataset: str) -> str | Rejection:
    """What the workers are given for ``dataset``: "synthetic", or the folder it names
    inside ``settings.datasets_dir`` as an absolute path (the API sees the folder the
    workers read: compose and k8s mount one volume in both). Nothing outside that folder can
    be named: workers read the spec as a path, and "/" would make the scheduler walk the
    whole filesystem."""

    def refuse(why: str) -> Rejection:
        return Rejection(
            "InvalidInput",
            f"dataset: {why}; accepted: {SYNTHETIC!r} or {DATASET_ACCEPTED[1]}",
            field="dataset",
            accepted=DATASET_ACCEPTED,
        )

    if len(dataset) > MAX_DATASET_CHARS:
        return refuse(f"at most {MAX_DATASET_CHARS} characters (got {len(dataset)})")
    if dataset == SYNTHETIC:
        return dataset
    relative = relative_inside(dataset)
    if relative is None:
        return refuse(f"{dataset!r} is not a folder inside the datasets folder")
    folder = Path(settings.datasets_dir).expanduser() / relative
    spec = str(folder)
    if len(spec) > MAX_DATASET_CHARS:
        return refuse(f"the folder's full path is longer than {MAX_DATASET_CHARS} characters")
    # Checked here, not by the scheduler: a name that is not there is the client's mistake,
    # told now, and in the client's own words (never the server's path). Checked by the
    # resolved path: '..' is refused as text above, and a link inside the datasets folder
    # to /usr/share (or to "/") must not pass as one of its folders. The workers check it
    # again where they read (services/preprocess/datasets.dataset_folder).
    problem = _outside(folder, Path(settings.datasets_dir).expanduser())
    if problem is not None:
        return refuse(f"{dataset!r} {problem}")
    return spec


def _outside(folder: Path, datasets_dir: Path) -> str | None:
    """Why ``folder`` is not a folder whose resolved path lies inside ``datasets_dir``'s,
    or None. Never says where a link leads (a server path)."""
    missing = "is not a folder in the datasets folder (the datasets query lists them)"
    try:
        real = folder.resolve(strict=True)
        root = datasets_dir.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a loop of links
        return missing
    if not real.is_relative_to(root):
        return "leads outside the datasets folder through a link"
    return None if real.is_dir() else missing
