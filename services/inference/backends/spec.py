"""What a backend declares about itself in its folder's ``config.py``.

``services/inference/backends/<name>/config.py`` holds one ``CONFIG = BackendSpec(...)``
and is the only place a backend is registered: the registry, the manifest's framework
names, the API's option checks, worker detection, the recorded environment, the CLI's
help, the profilers of each trace level, ONNX conversion, the runtime facts recorded
with a run and the options a run takes from the deployment are all read from it
(services/inference/backends/registry.py); no edge compares a backend's name. It must stay
import-light (pydantic and this module only): the API and ``benchstack --help`` read every
backend's spec and never wait for torch or TensorFlow to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, StringConstraints

T = TypeVar("T")


def _lowered(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


# A choice matched without regard to case, as the backends have always read them.
Choice = Annotated[T, BeforeValidator(_lowered)]
# A name or label from a submission: bounded, one line, no control characters.
PlainText = Annotated[str, StringConstraints(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")]

DEVICE_KINDS = ("cpu", "cuda")
# Opsets a backend that converts to ONNX accepts: above every opset released so far (the
# exporter refuses one it cannot write).
MIN_ONNX_OPSET, MAX_ONNX_OPSET = 7, 30
# The trace levels whose instrument is the backend's own; NONE, MODEL and SYSTEM are the
# harness's, the same for every backend (services/inference/profiling/instruments.py).
BACKEND_TRACE_LEVELS = ("FRAMEWORK", "LIBRARY")


class BackendOptionsModel(BaseModel):
    """The options a backend reads from a submission: unknown keys are refused and every
    field is typed and bounded (declare choices as ``Choice[Literal[...]]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(BackendOptionsModel):
    """A backend that reads no options from a submission."""


@dataclass(frozen=True)
class ZooSpec:
    """A model zoo the backend builds from, named by a manifest's ``source.architecture``
    as 'zoo:name' (services/core/architectures.py checks the name)."""

    library: str  # the module that must be installed to list and build the zoo's models
    # "module:function" in the folder: the zoo's names, imported only when asked for.
    names: str


@dataclass(frozen=True)
class BackendSpec:
    name: str
    summary: str  # one line for the CLI's help and the docs
    # "module:Class", the module relative to the backend's folder; imported only when a
    # worker creates the backend.
    entry: str
    options: type[BackendOptionsModel] = NoOptions
    # The module that must import for the backend to be offered (None: always offered) and
    # the distributions whose installed version names the framework's version.
    probe_module: str | None = None
    distributions: tuple[str, ...] = ()
    # Packages worth recording with every figure besides the distributions (e.g. torchvision).
    related_packages: tuple[str, ...] = ()
    extra: str = ""  # the pyproject extra that installs it; "" = the backend's name
    devices: tuple[str, ...] = ("cpu",)
    # True when the Backend implements predict_async (the SUT then issues without waiting).
    asynchronous: bool = False
    aliases: tuple[str, ...] = ()  # other names a manifest may use, e.g. "pytorch"
    # Option keys a submission may never set, with why (e.g. which server to talk to).
    refused_options: dict[str, str] = field(default_factory=dict)
    # Option keys a run gets from the deployment's settings when its submission sets none:
    # key -> the shared.settings.Settings attribute (triton's url: BENCHSTACK_TRITON_URL).
    deployment_options: Mapping[str, str] = field(default_factory=dict)
    # Numeric option keys checked before the options model, each message naming both ends
    # of its range: key -> the Settings attribute that bounds it above (a deployment's
    # limit), or "" for the options model's own upper bound (its Field's le).
    settings_bounds: Mapping[str, str] = field(default_factory=dict)
    # Its own profilers: trace level (BACKEND_TRACE_LEVELS) -> "module:function" in the
    # folder, called with the loaded Backend; it returns the Instrument, or a str saying
    # why none applies to this model. profiler_gaps: level -> why it has none at all.
    profilers: Mapping[str, str] = field(default_factory=dict)
    profiler_gaps: Mapping[str, str] = field(default_factory=dict)
    # "module:function" in the folder, called with (Backend, batch) after a FRAMEWORK pass:
    # each layer's work and the machine's peaks for the roofline (None: no roofline).
    roofline: str | None = None
    # "module:function" in the folder, called only once probe_module is already imported:
    # runtime facts recorded with a run (CUDA build, providers), a JSON-able dict.
    runtime_info: str | None = None
    # The format of the model files its manifests name when that is a format other
    # backends read too ("onnx": a converted model runs on it), and "module:function" in
    # the folder that exports one of its manifests' models to an ONNX file
    # (services/inference/backends/convert.py: (manifest, model, example path, opset, exporter)).
    file_format: str = ""
    onnx_export: str | None = None
    # What a manifest's source.architecture builds in memory, for the workloads that take
    # a model apart (bricks, training: "torch.nn.Module"); "" = nothing they can use.
    architecture_models: str = ""
    # The model zoos it builds from: zoo name -> ZooSpec (torch: torchvision, benchstack).
    zoos: Mapping[str, ZooSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"backend name {self.name!r}: must be a Python identifier")
        unknown = set(self.devices) - set(DEVICE_KINDS)
        if unknown or not self.devices:
            raise ValueError(
                f"backend {self.name}: devices {sorted(unknown) or '()'} not accepted; "
                f"accepted: {', '.join(DEVICE_KINDS)}"
            )
        entries = [self.entry, self.roofline, self.runtime_info, self.onnx_export]
        entries += [*self.profilers.values(), *(zoo.names for zoo in self.zoos.values())]
        if any(e is not None and ":" not in e for e in entries):
            raise ValueError(f"backend {self.name}: an entry must be 'module:name'")
        levels = set(self.profilers) | set(self.profiler_gaps)
        if not levels <= set(BACKEND_TRACE_LEVELS):
            raise ValueError(
                f"backend {self.name}: profiler levels {sorted(levels)}; accepted: "
                f"{', '.join(BACKEND_TRACE_LEVELS)}"
            )
        if set(self.profilers) & set(self.profiler_gaps):
            raise ValueError(f"backend {self.name}: a level has a profiler and a gap")
        undeclared = (
            (set(self.settings_bounds) | set(self.deployment_options))
            - set(self.options.model_fields)
            - set(self.refused_options)
        )
        if undeclared:
            raise ValueError(f"backend {self.name}: options {sorted(undeclared)} undeclared")

    @property
    def install_extra(self) -> str:
        return self.extra or self.name

    @property
    def option_keys(self) -> tuple[str, ...]:
        return tuple(sorted(self.options.model_fields))
