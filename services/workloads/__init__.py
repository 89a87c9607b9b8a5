"""The kinds of measurement, one folder each: ``<name>/workload.py`` declares ``WORKLOAD``
(services/core/workload.Workload). Adding a kind is adding a folder; the stages look it up
here by the name an evaluation stores.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from services.core.workload import DEFAULT_WORKLOAD, Workload


@functools.cache
def workloads() -> dict[str, Workload]:
    """Name -> workload, for every folder here with a workload.py."""
    found: dict[str, Workload] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if not module_info.ispkg:
            continue
        try:
            module = importlib.import_module(f"{__name__}.{module_info.name}.workload")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{module_info.name}.workload":
                raise  # a workload whose own imports fail must say so, not vanish
            continue  # a folder of helpers, not a workload
        workload: Workload = module.WORKLOAD
        found[workload.name] = workload
    return found


def workload_named(name: str | None) -> Workload:
    """The workload an evaluation or a message names (None: the default, LoadGen)."""
    known = workloads()
    try:
        return known[name or DEFAULT_WORKLOAD]
    except KeyError:
        raise ValueError(
            f"workload: {name!r} is not a kind of measurement; accepted: {', '.join(sorted(known))}"
        ) from None
