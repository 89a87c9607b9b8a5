"""The frameworks a manifest may name, the model zoos it may build from and the packages a
run's environment records, as the backends declare them.

The backends live above shared (``services/inference/backends/<name>/config.py``, one
folder each) and shared imports nothing from services. So the backends' registry provides
this catalogue instead: ``services/__init__.py`` calls ``provide`` when the ``services``
package is first imported, which every entry point does (the CLI, the workers, the API,
a measurement child; the tests' conftest). Reading it in a process that never imported
``services`` is a programming error, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol


class FrameworkCatalogue(Protocol):
    def backend_names(self) -> list[str]:
        """Every backend's name, e.g. ['null', 'onnxruntime', ..., 'torch']."""
        ...

    def aliases(self) -> dict[str, str]:
        """Other names a manifest may use -> the backend's name, e.g. 'pytorch' -> 'torch'."""
        ...

    def recorded_packages(self) -> tuple[str, ...]:
        """The distributions whose versions a run's environment names per framework."""
        ...

    def zoos(self) -> Mapping[str, tuple[str, str, Callable[[], list[str]]]]:
        """Model zoo -> (the backend that builds its models, the library that must be
        installed, what lists its names), e.g. 'torchvision' -> ('torch', 'torchvision', f)."""
        ...


_provider: Callable[[], FrameworkCatalogue] | None = None


class NoFrameworkCatalogue(RuntimeError):
    """Nothing provided the catalogue: ``services`` was never imported in this process."""


def provide(provider: Callable[[], FrameworkCatalogue]) -> None:
    """Install what ``catalogue()`` returns; called at the first import of ``services``.
    A callable, so the backends' configs are read when first needed, not at import."""
    global _provider
    _provider = provider


def catalogue() -> FrameworkCatalogue:
    if _provider is None:
        raise NoFrameworkCatalogue(
            "no framework catalogue: import services first (services/__init__.py provides "
            "the backends' registry as shared.frameworks' catalogue)"
        )
    return _provider()


def canonical_framework(name: str) -> str:
    """``name`` as the backend calls itself (an alias resolved); ValueError naming the
    accepted names when no backend declares it."""
    frameworks = catalogue()
    canonical = frameworks.aliases().get(name, name)
    if canonical not in frameworks.backend_names():
        accepted = [*frameworks.backend_names(), *frameworks.aliases()]
        raise ValueError(f"{name!r} is not a framework; accepted: {', '.join(accepted)}")
    return canonical
