"""Server paths out of what a client reads: a stored run's report and settings, and the
GraphQL fields that serve them.

A run of the stack is read by users who are not the server's operator: its report must
name what the client named (the dataset folder relative to the datasets folder, object
keys), never where the server keeps them. ``server_roots`` lists the server's folders;
``without_roots`` rewrites every string of a JSON value so that a path under one of them
is named relative to it ("<datasets_dir>/imagenet/val" is "imagenet/val", an object file
"<data_dir>/objects/runs/<id>/..." is its key "runs/<id>/..."), inside sentences too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from shared.settings import Settings


def server_roots(settings: Settings) -> tuple[str, ...]:
    """The server's folders, most specific first, each as written and as resolved (a link
    or '~' in a setting must not let the resolved spelling through)."""
    folders = [
        settings.datasets_dir,
        settings.models_dir,
        settings.objects_dir,
        settings.data_dir,
    ]
    return roots_of(folders)


def roots_of(folders: Iterable[Path | str]) -> tuple[str, ...]:
    """Each folder as written, expanded and resolved, without a trailing separator;
    longest first, so that a folder inside another is matched before it."""
    spellings: set[str] = set()
    for folder in folders:
        path = Path(folder).expanduser()
        for spelling in (str(folder), str(path), str(path.absolute()), os.path.realpath(path)):
            cleaned = spelling.rstrip("/")
            # Absolute spellings only: a relative one ("data") would match inside any
            # path; "/" itself is no server folder to hide.
            if cleaned.startswith(("/", "~")) and cleaned != "~":
                spellings.add(cleaned)
    return tuple(sorted(spellings, key=len, reverse=True))


def without_roots(value: Any, roots: Sequence[str]) -> Any:
    """``value`` (JSON: dicts, lists, strings, figures) with every "<root>/" in its strings
    and keys removed, so that paths under the roots are named relative to them; a string
    that is a root itself becomes "."."""
    if isinstance(value, str):
        return _relative(value, roots)
    if isinstance(value, dict):
        return {_relative(str(k), roots): without_roots(v, roots) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_roots(v, roots) for v in value]
    return value


def _relative(text: str, roots: Sequence[str]) -> str:
    if "/" not in text:
        return text
    for root in roots:
        if text == root:
            return "."
        text = text.replace(root + "/", "")
    return text
