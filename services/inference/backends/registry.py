"""Every backend, found by its folder: ``services/inference/backends/<name>/config.py``.

Nothing else registers a backend. The manifest's framework names and aliases, the API's
option checks, worker detection, the environment recorded with a figure and the CLI's
help all ask this module, so adding a backend is one folder (plus its pyproject extra).
Only the specs are imported here; a backend's own module (and its framework) is imported
when a worker creates it.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from functools import cache
from importlib import metadata
from typing import TYPE_CHECKING, Any

from services.inference import backends as backends_package
from services.inference.backend_interface import (
    Backend,
    BackendError,
    BackendOptions,
    BackendUnavailable,
)
from services.inference.backends.spec import BackendSpec

if TYPE_CHECKING:
    import numpy as np

    from services.core.manifest import ModelManifest
    from services.inference.profiling.instruments import Instrument


class UnknownBackend(ValueError):
    """A framework name no backend folder declares."""


@cache
def specs() -> dict[str, BackendSpec]:
    """name -> spec, in name order, from every sub-package that has a config.py."""
    found: dict[str, BackendSpec] = {}
    for module_info in pkgutil.iter_modules(backends_package.__path__):
        if not module_info.ispkg:
            continue
        package = f"{backends_package.__name__}.{module_info.name}"
        if importlib.util.find_spec(f"{package}.config") is None:
            continue
        spec = importlib.import_module(f"{package}.config").CONFIG
        if not isinstance(spec, BackendSpec) or spec.name != module_info.name:
            raise TypeError(
                f"{package}.config.CONFIG must be a BackendSpec named {module_info.name!r}"
            )
        found[spec.name] = spec
    return dict(sorted(found.items()))


def backend_names() -> list[str]:
    return list(specs())


def aliases() -> dict[str, str]:
    """Other names a manifest may use -> the backend's name, e.g. 'pytorch' -> 'torch'."""
    return {alias: spec.name for spec in specs().values() for alias in spec.aliases}


def spec_for(name: str) -> BackendSpec:
    found = specs().get(name)
    if found is None:
        raise UnknownBackend(
            f"framework: unknown backend {name!r}; accepted: {', '.join(backend_names())}"
        )
    return found


def installed_version(name: str) -> str | None:
    """The installed version of a backend's framework; None when it cannot be imported."""
    spec = spec_for(name)
    if spec.probe_module is None:
        from shared.package_version import __version__

        return __version__
    if importlib.util.find_spec(spec.probe_module) is None:
        return None
    for distribution in spec.distributions:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def available_backends(device_kind: str | None = None) -> list[str]:
    """The backends this machine can create (their framework imports), and of those only
    the ones that run on ``device_kind`` ("cpu", "cuda") when it is given."""
    return [
        name
        for name, spec in specs().items()
        if (device_kind is None or device_kind in spec.devices)
        and installed_version(name) is not None
    ]


def recorded_packages() -> tuple[str, ...]:
    """Every backend's framework distributions and related packages, for the environment."""
    return tuple(
        dict.fromkeys(
            package
            for spec in specs().values()
            for package in (*spec.distributions, *spec.related_packages)
        )
    )


def folder_entry(name: str, entry: str) -> Any:
    """What a ``"module:name"`` entry of backend ``name``'s spec names, the module
    relative to its folder; imported now (with its framework), never at registration."""
    module_name, attribute = entry.split(":")
    module = importlib.import_module(f"{backends_package.__name__}.{name}.{module_name}")
    return getattr(module, attribute)


def profiler_gap(name: str, level: str) -> str | None:
    """Why backend ``name`` has no profiler at ``level`` (its spec's ``profiler_gaps``)."""
    spec = specs().get(name)
    return spec.profiler_gaps.get(level) if spec is not None else None


def profiler(name: str, level: str) -> Callable[[Backend], Instrument | str] | None:
    """What makes backend ``name``'s instrument of ``level`` (its spec's ``profilers``)."""
    spec = specs().get(name)
    if spec is None or level not in spec.profilers:
        return None
    made: Callable[[Backend], Instrument | str] = folder_entry(name, spec.profilers[level])
    return made


def roofline(name: str) -> Callable[[Backend, np.ndarray], dict[str, Any]] | None:
    """What measures each layer's work and the machine's peaks (its spec's ``roofline``)."""
    spec = specs().get(name)
    if spec is None or spec.roofline is None:
        return None
    measure: Callable[[Backend, np.ndarray], dict[str, Any]] = folder_entry(name, spec.roofline)
    return measure


def zoos() -> dict[str, tuple[str, str, Callable[[], list[str]]]]:
    """Every model zoo a backend declares: zoo -> (the backend that builds its models, the
    library it needs, what lists its names: imported only when called)."""

    def lister(name: str, entry: str) -> Callable[[], list[str]]:
        return lambda: list(folder_entry(name, entry)())

    return {
        zoo: (spec.name, declared.library, lister(spec.name, declared.names))
        for spec in specs().values()
        for zoo, declared in spec.zoos.items()
    }


def with_file_format(file_format: str) -> str:
    """The backend whose manifests name files of ``file_format`` (e.g. "onnx")."""
    for spec in specs().values():
        if spec.file_format == file_format:
            return spec.name
    raise UnknownBackend(f"file format {file_format!r}: no backend declares it")


def backend_class(name: str) -> type[Backend]:
    spec = spec_for(name)
    module_name, class_name = spec.entry.split(":")
    package = f"{backends_package.__name__}.{name}"
    try:
        module = importlib.import_module(f"{package}.{module_name}")
    except ImportError as exc:
        raise BackendUnavailable(
            f"framework: backend {name!r} needs a package that is not installed ({exc.name}); "
            f"install it with: pip install 'benchstack[{spec.install_extra}]'"
        ) from exc
    cls: type[Backend] = getattr(module, class_name)
    if cls.asynchronous != spec.asynchronous:
        raise TypeError(
            f"backend {name}: its config.py says asynchronous={spec.asynchronous} but "
            f"{class_name}.asynchronous is {cls.asynchronous}"
        )
    return cls


def create_backend(name: str, options: BackendOptions | None = None) -> Backend:
    try:
        cls = backend_class(name)
    except UnknownBackend as exc:
        raise BackendError(str(exc)) from None
    return cls(options)


def load_backend(name: str, options: BackendOptions, manifest: ModelManifest) -> Backend:
    """A backend with ``manifest`` loaded; closed again (sessions, device memory) when the
    load fails part way."""
    backend = create_backend(name, options)
    try:
        backend.load(manifest)
    except BaseException:
        backend.close()
        raise
    return backend
