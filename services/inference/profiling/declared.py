"""The profilers each backend declares in its folder's config.py (``profilers``,
``profiler_gaps``, ``roofline``: services/inference/backends/spec.py), as the backends'
registry provides them.

The backends sit above this harness: their profilers subclass its ``Instrument`` and use
its layer tools, so the harness imports nothing of theirs. The registry provides this
catalogue instead, when the ``services`` package is first imported (services/__init__.py),
as it provides shared/frameworks.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from services.inference.backend_interface import Backend
    from services.inference.profiling.instruments import Instrument


class DeclaredProfilers(Protocol):
    def profiler_gap(self, name: str, level: str) -> str | None:
        """Why backend ``name`` has no profiler at ``level`` at all, if its spec says so."""
        ...

    def profiler(self, name: str, level: str) -> Callable[[Backend], Instrument | str] | None:
        """What makes backend ``name``'s instrument of ``level`` (or the reason it has
        none for this model); None where its spec declares none."""
        ...

    def roofline(self, name: str) -> Callable[[Backend, np.ndarray], dict[str, Any]] | None:
        """What measures each layer's work and the machine's peaks for backend ``name``."""
        ...


_provider: Callable[[], DeclaredProfilers] | None = None


class NoDeclaredProfilers(RuntimeError):
    """Nothing provided the catalogue: ``services`` was never imported in this process."""


def provide(provider: Callable[[], DeclaredProfilers]) -> None:
    """Install what ``declared()`` returns; called at the first import of ``services``."""
    global _provider
    _provider = provider


def declared() -> DeclaredProfilers:
    if _provider is None:
        raise NoDeclaredProfilers(
            "no declared profilers: import services first (services/__init__.py provides "
            "the backends' registry as the profiling harness's catalogue)"
        )
    return _provider()
