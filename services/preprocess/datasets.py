"""Datasets: a folder of images (flat, or one sub-folder per class) or seeded synthetic JPEGs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Sample is defined beside the reads of its file; imported here, where callers find it.
from services.preprocess.sample_files import Sample, total_problem
from services.preprocess.synthetic import make_synthetic
from shared.settings import Settings, get_settings

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff"}


class DatasetError(ValueError):
    """The dataset cannot be used; the message says why and what is accepted."""


class OutOfMemory(DatasetError):
    """Preparing the samples needed more memory than the process may use; the message
    says how much it had (shared/memory_limit.error_text)."""


@dataclass(frozen=True)
class SampleError:
    """Why one sample could not be prepared; the others go on."""

    sample_id: str
    message: str

    def __str__(self) -> str:
        return f"{self.sample_id}: {self.message}"


@dataclass(frozen=True)
class Dataset:
    name: str
    root: Path
    samples: list[Sample]
    class_names: list[str]


def _image_files(root: Path) -> Iterator[Path]:
    """The image files under ``root``, following no link to a folder: the walk never
    leaves the folder (a link to "/" walked the whole filesystem). A link to a file is
    listed; reading it checks where it leads (sample_files.real_path). A folder that
    cannot be read is left out, as before."""
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif os.path.splitext(entry.name)[1].lower() in IMAGE_SUFFIXES and entry.is_file():
                yield Path(entry.path)


def scan_folder(root: Path, within: Path | None = None) -> tuple[list[Sample], list[str]]:
    """The samples under ``root``, each to be read inside ``within`` (by default the
    folder itself, resolved)."""
    within = within or root.resolve()
    files = sorted(_image_files(root))
    class_dirs = sorted({p.parent.name for p in files if p.parent != root})
    labelled = bool(class_dirs) and all(p.parent != root for p in files)
    class_index = {name: i for i, name in enumerate(class_dirs)}
    samples = [
        Sample(
            id=str(p.relative_to(root)),
            path=p,
            label=class_index[p.parent.name] if labelled else None,
            within=within,
        )
        for p in files
    ]
    return samples, class_dirs if labelled else []


def dataset_folder(spec: str, datasets_dir: Path) -> tuple[Path, Path]:
    """(the folder ``spec`` names, resolved; the folder its files must resolve inside).

    A folder named inside ``datasets_dir`` (every API submission's) must resolve inside it
    too, and so must its files: a link there to /usr/share is refused. Any other folder
    (the CLI's, named by the host's own user) confines its files to itself."""
    folder = Path(spec).expanduser()
    try:
        real = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        real = None
    if real is None or not real.is_dir():
        raise DatasetError(
            f"dataset: {spec!r} is not a folder; accepted: 'synthetic' or a folder of images"
        )
    shared = Path(datasets_dir).expanduser().absolute()
    if not folder.absolute().is_relative_to(shared):
        return real, real
    within = shared.resolve()
    if not real.is_relative_to(within):
        raise DatasetError(
            f"dataset: {spec!r} leads outside the datasets folder (through a link); "
            "accepted: a folder inside it"
        )
    return real, within


def resolve_dataset(
    spec: str, *, count: int | None, seed: int, cache_dir: Path, settings: Settings | None = None
) -> Dataset:
    """``spec`` is 'synthetic' or a folder; ``count`` keeps the first N samples (sorted by id).

    Refused (DatasetError) when the files those samples read hold more than
    ``max_dataset_bytes`` together (sample_files.total_problem)."""
    settings = settings or get_settings()
    if spec == "synthetic":
        # A cache of its own (services/preprocess/synthetic.py), not the datasets folder.
        cache_mb = settings.synthetic_cache_mb
        root = make_synthetic(cache_dir / "synthetic", count or 64, seed, cache_mb * 2**20)
        root = root.resolve()
        within = root
        name = f"synthetic(seed={seed},n={count or 64})"
    else:
        root, within = dataset_folder(spec, settings.datasets_dir)
        name = str(root)
    samples, class_names = scan_folder(root, within)
    if not samples:
        raise DatasetError(
            f"dataset: no images in {root} (looked for {', '.join(sorted(IMAGE_SUFFIXES))})"
        )
    if count is not None:
        if count < 1:
            raise DatasetError("samples: must be at least 1")
        samples = samples[:count]
    problem = total_problem(samples, settings.max_sample_bytes, settings.max_dataset_bytes)
    if problem is not None:
        raise DatasetError(problem)
    return Dataset(name=name, root=root, samples=samples, class_names=class_names)
