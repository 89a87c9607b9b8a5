"""Whether numpy asks the kernel for transparent huge pages: benchstack processes ask not.

numpy advises huge pages (madvise MADV_HUGEPAGE) for every array of 4 MiB or more.
Where the kernel compacts memory to find them as an advised array is first touched
(transparent_hugepage/defrag "madvise", as on this project's test VMs), writing a fresh
large array costs several times as much as with ordinary pages. Measured on one such
VM: finishing 1024 stored crops into float32 (batch.finish, 616 MB) took 1.41 s with
the advice and 0.27 s without, and `benchstack bench --samples 1024` spent 2.7 s instead
of 1.5 s preparing its data. Where huge pages come cheap the advice saves a little on
first touch (one fault per 2 MiB instead of per 4 KiB); the loss there is small against
the stalls here, so benchstack's processes go without it.

A NUMPY_MADVISE_HUGEPAGE set by the user is numpy's own switch, read as numpy is
imported, and is left as the user set it (1 restores the advice, for comparison).
"""

from __future__ import annotations

import importlib
import os

USER_SWITCH = "NUMPY_MADVISE_HUGEPAGE"


def prefer_ordinary_pages() -> bool:
    """Turn numpy's huge-page advice off for this process, unless the user chose with
    USER_SWITCH. Returns whether the advice is now off."""
    if USER_SWITCH in os.environ:
        return os.environ[USER_SWITCH].strip() == "0"
    # numpy's runtime form of USER_SWITCH (its import calls it with the variable's value);
    # absent from a numpy without the advice, where there is nothing to turn off.
    try:
        multiarray = importlib.import_module("numpy._core.multiarray")
    except ImportError:  # numpy 1.x keeps it elsewhere; the advice stays as it was
        return False
    set_advice = getattr(multiarray, "_set_madvise_hugepage", None)
    if set_advice is None:  # a numpy that never advises: nothing to turn off
        return True
    set_advice(False)
    return True
