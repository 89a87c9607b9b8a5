"""The image folders a submission can name: what lies in the datasets folder the API and
the workers share (``settings.datasets_dir``; compose mounts one volume in both).

Listed for the web form's dataset select and the ``datasets`` query. No link to a folder
is followed, and a link to a file counts only when it resolves inside the datasets folder
(what the workers read: services/preprocess/sample_files.py). The walk is bounded:
folders two levels down at most (``imagenet`` and ``imagenet/val``), MAX_CANDIDATES of
them looked at, MAX_FOLDERS counted a page, and image counting stops at COUNT_CAP per
folder, so a huge tree costs a bounded time. The listing is paged with the total count
(``DatasetListing``): nothing drops out of it unsaid.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from services.preprocess.datasets import IMAGE_SUFFIXES

MAX_DEPTH = 2
# Folders counted in full per page (each up to COUNT_CAP images).
MAX_FOLDERS = 100
# Folders looked at, one and two levels down, per listing: each is walked until its first
# image is found, for the total count.
MAX_CANDIDATES = 10_000
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


@dataclass(frozen=True)
class DatasetListing:
    """One page of the folders holding images, by name, and how many there are in all."""

    items: list[DatasetFolder]
    # Every folder holding images (of the first MAX_CANDIDATES folders looked at).
    total_count: int
    # The offset of the next page; None on the last one.
    next_offset: int | None
    # False when the datasets folder has more than MAX_CANDIDATES folders two levels
    # down: ``total_count`` counts the first MAX_CANDIDATES by name.
    complete: bool = True


def _candidates(root: Path) -> tuple[list[Path], bool]:
    """The folders one and two levels down, by name (no link, no hidden folder), at most
    MAX_CANDIDATES of them; whether that was all."""
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
        if len(candidates) > MAX_CANDIDATES:
            break
    candidates.sort(key=lambda p: p.relative_to(root).as_posix())
    return candidates[:MAX_CANDIDATES], len(candidates) <= MAX_CANDIDATES


def list_datasets(datasets_dir: Path, first: int = MAX_FOLDERS, offset: int = 0) -> DatasetListing:
    """The folders holding images, ``first`` of them from ``offset`` (at most MAX_FOLDERS
    a page), with the count of all: never cut short without saying so (a fixed 100 let
    folders drop out of the web form unseen). Nothing when the folder does not exist."""
    root = Path(datasets_dir).expanduser()
    if not root.is_dir():
        return DatasetListing(items=[], total_count=0, next_offset=None)
    candidates, complete = _candidates(root)
    within = root.resolve()
    # Whether each holds an image: a walk that stops at the first one found.
    holding = [f for f in candidates if count_images(f, cap=1, within=within)[0]]
    first = max(1, min(first, MAX_FOLDERS))
    page = holding[offset : offset + first]
    items = []
    for folder in page:
        images, more, classes = count_images(folder, within=within)
        items.append(DatasetFolder(folder.relative_to(root).as_posix(), images, more, classes))
    end = offset + len(page)
    return DatasetListing(
        items=items,
        total_count=len(holding),
        next_offset=end if end < len(holding) else None,
        complete=complete,
    )
