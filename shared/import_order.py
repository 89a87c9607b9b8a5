"""Native libraries that must load in one order to share a process.

OpenAI Triton (which torch imports for ``torch.compile`` and its profiler) and TensorFlow
each bundle their own LLVM. Importing Triton after TensorFlow crashes the interpreter with
a segmentation fault (``python3 -c "import keras; import triton"`` exits 139); the other
order works. The embedded mode, a sweep across frameworks and the test suite all load both
in one process, in whichever order the user's commands ask for.

``install()`` puts a finder first on ``sys.meta_path``. For TensorFlow and Keras it hands
back the spec the other finders find, with a loader that imports Triton (when installed)
just before the module runs. A probe that only looks for TensorFlow
(``importlib.util.find_spec``, as the backends' availability checks do) loads nothing,
and a process that never imports TensorFlow pays nothing. ``shared/__init__.py`` and
``services/__init__.py`` call it, so every entry point (the CLI, the Celery workers, a
measurement child, the tests) has it before any framework loads; a process that loaded
TensorFlow before importing us is warned, since nothing can be done for it then.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

# Top-level packages whose import loads TensorFlow's LLVM.
LOADS_TENSORFLOW = frozenset({"tensorflow", "keras", "tf_keras"})
# What must be loaded before them.
LOAD_FIRST = "triton"


def load_first() -> bool:
    """Import Triton now if it is installed; True when it is loaded afterwards. A broken
    Triton is torch's business, not a reason to stop here."""
    if LOAD_FIRST in sys.modules:
        return True
    if importlib.util.find_spec(LOAD_FIRST) is None:
        return False
    with contextlib.suppress(Exception):
        importlib.import_module(LOAD_FIRST)
    return LOAD_FIRST in sys.modules


class _TritonFirst(importlib.abc.Loader):
    """Runs ``load_first`` just before the wrapped loader executes the module, then puts
    the wrapped loader back on the module, so nothing after the import sees this one."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        load_first()
        self.loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:
        # is_package, get_resource_reader, ...: the wrapped loader's own.
        return getattr(self.loader, name)


class _LoadFirst(importlib.abc.MetaPathFinder):
    """Wraps the loader of TensorFlow's and Keras's top-level packages; finds nothing itself."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LOADS_TENSORFLOW or LOAD_FIRST in sys.modules:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _TritonFirst(spec.loader)
                return spec
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once per process."""
    if any(isinstance(finder, _LoadFirst) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _LoadFirst())
    early = sorted(LOADS_TENSORFLOW & sys.modules.keys())
    if early and LOAD_FIRST not in sys.modules and importlib.util.find_spec(LOAD_FIRST):
        warnings.warn(
            f"{', '.join(early)} was imported before benchstack: importing {LOAD_FIRST} now "
            "(torch.compile, torch's profiler) would crash this process; import "
            "benchstack's packages first",
            RuntimeWarning,
            stacklevel=2,
        )
