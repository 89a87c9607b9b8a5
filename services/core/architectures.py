"""The builtin architectures a manifest may name as ``source.architecture``, by zoo.

``zoo:name``: the zoo says which library builds the model and so which framework runs it.
Each zoo is declared by the backend that builds from it (its folder's config.py ``zoos``),
read through shared/frameworks.py's catalogue. A zoo's library is imported only when its
names are asked for, so checking a manifest never waits for TensorFlow when the manifest
names a torchvision model.
"""

from __future__ import annotations

import difflib
import importlib.util
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from shared import frameworks

# torchvision holds over a hundred names: an error shows this many and the count.
SHOWN_NAMES = 60


@dataclass(frozen=True)
class Zoo:
    framework: str  # the backend that builds this zoo's models
    library: str  # the module that must be installed to list and build them
    names: Callable[[], list[str]]


class _DeclaredZoos(Mapping[str, Zoo]):
    """The zoos the backends declare, read each time from the frameworks' catalogue (which
    exists once ``services`` is imported), so importing this module reads no backend."""

    def _zoos(self) -> dict[str, Zoo]:
        return {name: Zoo(*entry) for name, entry in frameworks.catalogue().zoos().items()}

    def __getitem__(self, name: str) -> Zoo:
        return self._zoos()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._zoos())

    def __len__(self) -> int:
        return len(self._zoos())


ZOOS: Mapping[str, Zoo] = _DeclaredZoos()


class ZooUnavailable(LookupError):
    """The zoo's library is not installed here, so its names cannot be checked."""


def zoo_problem(spec: str) -> str | None:
    """What is wrong with the zoo ``spec`` ('zoo:name') names, or None: a check that
    imports nothing (the API's, at registration; the names are checked where the zoo's
    library is installed)."""
    zoo_name, _, _ = spec.partition(":")
    if zoo_name in ZOOS:
        return None
    accepted = ", ".join(f"'{z}:<name>'" for z in ZOOS)
    return f"source.architecture: unknown zoo {zoo_name!r} in {spec!r}; accepted: {accepted}"


def architecture_problem(spec: str, framework: str | None = None) -> str | None:
    """What is wrong with ``spec`` ('zoo:name'), or None when a backend can build it.

    ``framework`` is the one the manifest declares. A framework that builds models from a
    zoo (torch, tensorflow) must be that zoo's; others (triton, null ...) never build from
    the architecture and are not held to it. Raises ZooUnavailable when the zoo's library
    is not installed here.
    """
    zoo_name, _, name = spec.partition(":")
    unknown = zoo_problem(spec)
    if unknown is not None:
        return unknown
    zoos = dict(ZOOS)
    zoo = zoos[zoo_name]
    builders = {z.framework for z in zoos.values()}
    if framework in builders and framework != zoo.framework:
        own = ", ".join(f"'{z}:<name>'" for z, o in zoos.items() if o.framework == framework)
        return (
            f"source.architecture: {spec!r} is not a {framework} model (the "
            f"{zoo.framework} backend builds it); accepted: {own}, or framework.name "
            f"{zoo.framework!r}"
        )
    if importlib.util.find_spec(zoo.library) is None:
        raise ZooUnavailable(
            f"source.architecture: {spec!r} not checked: {zoo.library} is not installed here"
        )
    known = zoo.names()
    if name in known:
        return None
    close = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    shown = ", ".join(known[:SHOWN_NAMES]) + (", ..." if len(known) > SHOWN_NAMES else "")
    return (
        f"source.architecture: {zoo_name} has no model {name!r}; {hint}accepted: "
        f"'{zoo_name}:<name>' with one of its {len(known)} names ({shown})"
    )
