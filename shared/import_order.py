"""Native libraries that must load in one order to share a process.

OpenAI Triton (which torch imports for ``torch.compile`` and its profiler) and TensorFlow
each bundle their own LLVM. Importing Triton after TensorFlow crashes the interpreter with
a segmentation fault (``python3 -c "import keras; import triton"`` exits 139); the other
order works. The embedded mode, a sweep across frameworks and the test suite all load both
in one process, in whichever order the user's commands ask for.

``install()`` puts a finder first on ``sys.meta_path`` that, at the first import of
TensorFlow or Keras, loads Triton before it (when Triton is installed). It costs nothing
in a process that never imports TensorFlow. ``shared/__init__.py`` and
``services/__init__.py`` call it, so every entry point (the CLI, the Celery workers, a
measurement child, the tests) has it before any framework loads.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

# Top-level packages whose import loads TensorFlow's LLVM.
LOADS_TENSORFLOW = frozenset({"tensorflow", "keras", "tf_keras"})
# What must be loaded before them.
LOAD_FIRST = "triton"


class _LoadFirst(importlib.abc.MetaPathFinder):
    """Loads ``LOAD_FIRST`` before the first of ``LOADS_TENSORFLOW``; finds nothing itself."""

    def __init__(self) -> None:
        self.done = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not self.done and fullname in LOADS_TENSORFLOW:
            self.done = True
            load_first()
        return None


def load_first() -> bool:
    """Import Triton now if it is installed and TensorFlow is not loaded; True when it is
    loaded afterwards. A broken Triton is torch's business, not a reason to stop here."""
    if LOAD_FIRST in sys.modules:
        return True
    if any(name in sys.modules for name in LOADS_TENSORFLOW):
        return False  # too late: loading it now is the crash itself
    if importlib.util.find_spec(LOAD_FIRST) is None:
        return False
    with contextlib.suppress(Exception):
        importlib.import_module(LOAD_FIRST)
    return LOAD_FIRST in sys.modules


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once per process."""
    if not any(isinstance(finder, _LoadFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _LoadFirst())
