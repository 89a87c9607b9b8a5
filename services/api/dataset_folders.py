"""The image folders a submission can name: what lies in the datasets folder the API and
the workers share (``settings.datasets_dir``; compose mounts one volume in both).

Listed for the web form's dataset select and the ``datasets`` query. No link to a folder
is followed, and a link to a file counts only when it resolves inside the datasets folder
(what the workers read: services/preprocess/sample_files.py). The walk is bounded:
folders two levels down at most (``imagenet`` and ``imagenet/val``), MAX_FOLDERS folders,
and image counting stops at COUNT_CAP per folder, so a huge tree costs a bounded time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from services.preprocess.datasets import IMAGE_SUFFIXES

MAX_DEPTH = 2
MAX_FOLDERS = 100
COUNT_CAP = 10_000


@dataclass(frozen=True)
class DatasetFolder:
    # As a submission names it: the path inside the datasets folder, with "/".
    name: str
    # Images found, up to COUNT_CAP; ``more`` says the count stopped there.
    images: int
    more: bool
    # Sub-folders holding images directly: the classes when the folder is labelled.
    classes: int


def _is_image(entry: os.DirEntry[str], within: Path | None) -> bool:
    """An image file; a link to one counts only when it resolves inside ``within`` (the
    workers refuse the others: services/preprocess/sample_files.py)."""
    if os.path.splitext(entry.name)[1].lower() not in IMAGE_SUFFIXES or not entry.is_file():
        return False
    if within is None or not entry.is_symlink():
        return True
    try:
        return Path(entry.path).resolve(strict=True).is_relative_to(within)
    except (OSError, RuntimeError):
        return False


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    """The folder's entries; none when it cannot be read (the listing goes on without it)."""
    try:
        return list(os.scandir(folder))
    except OSError:
        return []


def count_images(
    root: Path, cap: int = COUNT_CAP, within: Path | None = None
) -> tuple[int, bool, int]:
    """(images up to ``cap``, whether more remain, sub-folders holding images). Links to
    folders are not followed; links to files count when they resolve inside ``within``."""
    images, classes = 0, 0
    pending = [root]
    while pending:
        folder = pending.pop()
        entries = _entries(folder)
        found = sum(1 for entry in entries if _is_image(entry, within))
        if found and folder != root:
            classes += 1
        images += found
        if images >= cap:
            return cap, True, classes
        pending.extend(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    return images, False, classes


def list_datasets(datasets_dir: Path, max_folders: int = MAX_FOLDERS) -> list[DatasetFolder]:
    """Folders holding images, by name; nothing when the datasets folder does not exist."""
    root = Path(datasets_dir).expanduser()
    if not root.is_dir():
        return []
    candidates: list[Path] = []
    level = [root]
    for _ in range(MAX_DEPTH):
        level = sorted(
            Path(e.path)
            for folder in level
            for e in _entries(folder)
            if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
        )
        candidates.extend(level)
    found: list[DatasetFolder] = []
    within = root.resolve()
    for folder in sorted(candidates, key=lambda p: p.relative_to(root).as_posix()):
        if len(found) >= max_folders:
            break
        images, more, classes = count_images(folder, within=within)
        if images:
            name = folder.relative_to(root).as_posix()
            found.append(DatasetFolder(name, images, more, classes))
    return found
