"""One run as a client asks for it, whichever launcher runs it (``RunRequest``), and the
checks of its fields, made once for both (``request_problem``, ``scenario_of``).

The fields keep the shapes a client sends (the scenario's settings and the backend's
options as plain objects), so a request can be stored in a group and submitted again;
``scenario_of`` reads the settings as a ScenarioConfig. What only one launcher needs is
passed beside the request: the stack's model version, inline manifest, agent placement
and client key (services/api/submission_request.py ``Submission``), the embedded
launcher's local choices (services/embedded/request.py ``Local``).

A problem names the field by the request's own name (``batch_size``,
``settings.min_duration_s``); each launcher spells it as its users type it (GraphQL's
``batchSize``, the CLI's ``--batch-size``) through ``RequestProblem.said``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from dataclasses import field as dc_field
from typing import Any, Literal, get_args

from pydantic import ValidationError

from services.core.manifest_sections import FIDELITIES
from services.core.scenario import SCENARIOS, ScenarioConfig
from services.core.trace_levels import TRACE_LEVELS
from services.core.workload import DEFAULT_WORKLOAD, MAX_BATCH_SIZE
from shared.devices import ACCEPTED as DEVICES_ACCEPTED
from shared.devices import DeviceError, parse_device

MAX_SEED = 2**31 - 1  # evaluations.seed: Integer
MAX_THREADS = 256  # intra-op threads a run may ask for


@dataclass(frozen=True)
class RunRequest:
    # A catalogue or registered model's name (the embedded launcher: or a manifest file).
    model: str | None = None
    # The backend; None: the manifest's framework (or the one a constraint term names).
    framework: str | None = None
    # None: the device a constraint term names, else "cpu".
    device: str | None = None
    scenario: str = "offline"
    # ScenarioConfig fields, snake_case or camelCase, as the client sent them; checked to
    # be an object by ``scenario_of``.
    settings: Any = dc_field(default_factory=dict)
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    seed: int = 0
    trace_level: str = "NONE"
    # Input.fidelity for every input, over the manifest's own; None: the manifest's.
    preprocessing: str | None = None
    # {"require": [terms of services.core.constraints]}, plus the older structured keys
    # "hostname" and "framework_version" (a PEP 440 specifier on the framework).
    constraints: dict[str, Any] = dc_field(default_factory=dict)
    # The backend's own options (its config.py's options model), as the client sent them.
    backend_options: Any = dc_field(default_factory=dict)
    # Intra-op threads; None: chosen for the scenario and the free CPUs (or the agent's).
    threads: int | None = None
    # The kinds of measurement named (services/workloads/<name>/), each with the options
    # given. None named: a LoadGen run on the dataset; more than one is refused.
    workloads: tuple[tuple[str, Any], ...] = ()
    # The group this run joins and what it is in it, e.g. {"id": ..., "kind": "sweep",
    # "parameter": "batch_size", "value": 8}. None: its own.
    group: dict[str, Any] | None = None

    @property
    def workload(self) -> str:
        """The kind of measurement asked for (the first named; a second is refused)."""
        return str(self.workloads[0][0]) if self.workloads else DEFAULT_WORKLOAD

    @property
    def named_settings(self) -> dict[str, Any]:
        """The scenario settings in ScenarioConfig's names (snake_case); none when they
        are not an object, which ``scenario_of`` refuses."""
        return snake_keys(dict(self.settings)) if isinstance(self.settings, dict) else {}

    def stored(self) -> dict[str, Any]:
        """The request as a group record keeps it to start its next members from (a
        find-peak search's): without its group, the scenario settings in snake_case."""
        stored = asdict(self)
        stored.pop("group")
        return stored | {"settings": self.named_settings}


ProblemKind = Literal["InvalidInput", "InvalidScenarioSettings"]


@dataclass(frozen=True)
class RequestProblem:
    """Why a request is refused: its field (the request's own name), what is wrong with
    it (without the field's name) and what would be accepted."""

    field: str
    message: str
    accepted: list[str] = dc_field(default_factory=list)
    kind: ProblemKind = "InvalidInput"

    def said(self, spell: Callable[[str], str] = str) -> str:
        """The problem as one line, its field spelled by ``spell``."""
        return f"{spell(self.field)}: {self.message}"


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(data: dict[str, Any]) -> dict[str, Any]:
    """GraphQL clients write minDurationS; ScenarioConfig names it min_duration_s."""
    return {_CAMEL.sub("_", k).lower(): v for k, v in data.items()}


def _out_of_range(name: str, value: int, low: int, high: int) -> RequestProblem | None:
    if low <= value <= high:
        return None
    bound = f"at least {low}" if value < low else f"at most {high}"
    return RequestProblem(
        name, f"must be {bound} (got {value}); accepted: {low} to {high}", [f"{low}..{high}"]
    )


def _one_of(name: str, value: str, accepted: tuple[str, ...]) -> RequestProblem | None:
    if value in accepted:
        return None
    return RequestProblem(name, f"{value!r}; accepted: {', '.join(accepted)}", list(accepted))


def request_problem(request: RunRequest, *, max_samples: int) -> RequestProblem | None:
    """The first of the request's plain fields out of bounds (``max_samples``: the
    deployment's Settings.max_samples), or None; its scenario: ``scenario_of``."""
    problem = _out_of_range("batch_size", request.batch_size, 1, MAX_BATCH_SIZE)
    if problem is None and request.samples is not None:
        problem = _out_of_range("samples", request.samples, 1, max_samples)
    if problem is None:
        problem = _out_of_range("seed", request.seed, 0, MAX_SEED)
    if problem is None and request.threads is not None:
        problem = _out_of_range("threads", request.threads, 1, MAX_THREADS)
    if problem is None:
        problem = _one_of("trace_level", request.trace_level, TRACE_LEVELS)
    if problem is None and request.preprocessing is not None:
        problem = _one_of("preprocessing", request.preprocessing, FIDELITIES)
    if problem is None and not isinstance(request.backend_options, dict):
        problem = RequestProblem("backend_options", "must be an object", ["an object"])
    if problem is None and request.device is not None:
        try:
            parse_device(request.device, field="")
        except DeviceError as exc:
            problem = RequestProblem("device", str(exc).removeprefix(": "), [DEVICES_ACCEPTED])
    return problem


def scenario_of(request: RunRequest) -> ScenarioConfig | RequestProblem:
    """The request's scenario and settings as a ScenarioConfig, or the setting at fault."""
    settings = request.settings
    if not isinstance(settings, dict):
        return RequestProblem(
            "settings",
            f'must be an object such as {{"min_duration_s": 1}} (got {settings!r})',
            kind="InvalidScenarioSettings",
        )
    if request.scenario not in SCENARIOS:
        return RequestProblem(
            "scenario",
            f"{request.scenario!r} is not accepted; accepted: {', '.join(SCENARIOS)}",
            list(SCENARIOS),
            "InvalidScenarioSettings",
        )
    try:
        return ScenarioConfig.model_validate({**snake_keys(settings), "scenario": request.scenario})
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"]) or "settings"
        name = loc if loc == "scenario" else f"settings.{loc}"
        message = error["msg"].removeprefix("Value error, ")
        accepted: list[str] = []
        if error["type"] == "extra_forbidden":
            accepted = sorted(set(ScenarioConfig.model_fields) - {"scenario"})
            message = f"unknown setting; accepted: {', '.join(accepted)}"
        elif error["type"] == "literal_error":  # mode, profile: say each accepted value
            field_info = ScenarioConfig.model_fields[str(error["loc"][0])]
            accepted = [str(a) for a in get_args(field_info.annotation)]
            message = f"not accepted; accepted: {', '.join(accepted)}"
        return RequestProblem(
            name, f"{message} (got {error.get('input')!r})", accepted, "InvalidScenarioSettings"
        )
