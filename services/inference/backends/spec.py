"""What a backend declares about itself in its folder's ``config.py``.

``services/inference/backends/<name>/config.py`` holds one ``CONFIG = BackendSpec(...)``
and is the only place a backend is registered: the registry, the manifest's framework
names, the API's option checks, worker detection, the recorded environment and the CLI's
help are all read from it (services/inference/backends/registry.py). It must stay
import-light (pydantic and this module only): the API and ``benchstack --help`` read every
backend's spec and never wait for torch or TensorFlow to import.
"""

from __future__ import annotations

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


class BackendOptionsModel(BaseModel):
    """The options a backend reads from a submission: unknown keys are refused and every
    field is typed and bounded (declare choices as ``Choice[Literal[...]]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(BackendOptionsModel):
    """A backend that reads no options from a submission."""


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

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"backend name {self.name!r}: must be a Python identifier")
        unknown = set(self.devices) - set(DEVICE_KINDS)
        if unknown or not self.devices:
            raise ValueError(
                f"backend {self.name}: devices {sorted(unknown) or '()'} not accepted; "
                f"accepted: {', '.join(DEVICE_KINDS)}"
            )
        if ":" not in self.entry:
            raise ValueError(f"backend {self.name}: entry must be 'module:Class'")

    @property
    def install_extra(self) -> str:
        return self.extra or self.name

    @property
    def option_keys(self) -> tuple[str, ...]:
        return tuple(sorted(self.options.model_fields))
