"""Celery node names: ``<kind>@<hostname>``, what compose healthchecks and k8s probes ping.

A container (or pod) runs one worker, so its name is exactly ``<kind>@$HOSTNAME``. On a
workstation several workers of one kind may share the host (``benchstack up`` plus a
second inference worker with other threads); two nodes with one name would share a
control queue, so the second and later ones take ``<kind>-2``, ``<kind>-3``... The slot is
held by an advisory file lock, which the kernel releases when the process exits, so a
crashed worker never leaves a slot taken.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from pathlib import Path
from typing import IO

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
# Open lock files, kept for the life of the process (closing one would release its slot).
_HELD: list[IO[bytes]] = []


def _try_lock(path: Path) -> bool:
    handle = path.open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    _HELD.append(handle)
    return True


def node_name(kind: str, *, name: str | None = None, lock_dir: Path | None = None) -> str:
    """The node name for Celery's ``--hostname`` (``%h`` is expanded by Celery).

    ``name`` (``--name``) is used as given; otherwise the first free slot on this host.
    """
    if name:
        if not _NAME.match(name):
            raise ValueError(f"name: {name!r} may hold only letters, digits, '.', '_' and '-'")
        return f"{name}@%h"
    folder = lock_dir or Path(tempfile.gettempdir()) / f"benchstack-nodes-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    slot = 1
    while not _try_lock(folder / f"{kind}-{slot}.lock"):
        slot += 1
    return f"{kind}@%h" if slot == 1 else f"{kind}-{slot}@%h"
