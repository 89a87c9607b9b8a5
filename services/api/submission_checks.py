"""The checks of a submission's plain fields, scenario and options: each returns a typed
rejection naming the field at fault and what it accepts, or None.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from services.api.bounds import OutOfBounds, settings_bounds_problem
from services.api.rejections import Rejection, RejectionKind
from services.core.manifest import ModelManifest
from services.core.request import (
    RequestProblem,
    RunRequest,
    request_problem,
    scenario_of,
    snake_keys,
)
from services.core.scenario import ScenarioConfig
from services.core.workload import MAX_WORKLOAD_NAME_CHARS, Workload
from services.inference.backends import registry
from services.workloads import workloads
from shared import queues
from shared.settings import Settings

# Bounds of a submission beyond the request's own (services/core/request.py). String
# limits are the column sizes of shared/db (evaluations, models): longer input is refused
# with a typed error, never truncated or sent to SQL (the model, version and dataset limits
# are services/api/confinement.py's).


MAX_DEVICE_CHARS = 50  # evaluations.device: String(50)


def graphql_name(name: str) -> str:
    """A request field as GraphQL spells it: batch_size -> batchSize; a setting keeps the
    name the client may send either way (settings.min_duration_s)."""
    head, dot, rest = name.partition(".")
    first, *words = head.split("_")
    return first + "".join(w.capitalize() for w in words) + dot + rest


def rejected(problem: RequestProblem) -> Rejection:
    """A request's problem (services/core/request.py) as the API returns it."""
    name = graphql_name(problem.field)
    return Rejection(
        problem.kind, problem.said(graphql_name), field=name, accepted=problem.accepted
    )


def scenario_config(request: RunRequest) -> ScenarioConfig | Rejection:
    scenario = scenario_of(request)
    return rejected(scenario) if isinstance(scenario, RequestProblem) else scenario


def setup_allowance_s(max_run_seconds: float) -> float:
    """Of a run's time limit, what model loading, calibration and warm-up may take:
    20 % of it, at most a minute (they take seconds for the models here)."""
    return min(60.0, 0.2 * max_run_seconds)


def run_cap_problem(scenario: ScenarioConfig, max_run_seconds: float) -> Rejection | None:
    """A run that cannot end within MAX_RUN_SECONDS would be killed at the limit, having
    measured nothing: refuse it now, naming the setting."""
    budget = max_run_seconds - setup_allowance_s(max_run_seconds)
    checks = [("min_duration_s", scenario.effective_min_duration_s)]
    if scenario.max_duration_s is not None:
        checks.append(("max_duration_s", scenario.max_duration_s))
    for name, seconds in checks:
        if seconds > budget:
            return Rejection(
                "InvalidScenarioSettings",
                f"settings.{name}: {seconds:g} s cannot finish within this deployment's run "
                f"limit (MAX_RUN_SECONDS={max_run_seconds:g} s, of which "
                f"{setup_allowance_s(max_run_seconds):g} s is kept for loading and "
                f"calibration); accepted: at most {budget:g} s",
                field=f"settings.{name}",
            )
    return None


def backend_options_problem(framework: str, options: Any) -> Rejection | None:
    """Only the options the chosen backend declares (its config.py's options model), each
    of its type and within its bounds; never one the backend refuses from a submission."""
    if not isinstance(options, dict):
        return Rejection(
            "InvalidInput", "backendOptions: must be an object", field="backendOptions"
        )
    spec = registry.spec_for(framework)
    known = list(spec.option_keys)
    for key in options:
        field = f"backendOptions.{key}"[:80]
        if key in spec.refused_options:
            return Rejection(
                "InvalidInput",
                f"{field}: not accepted from a submission: {spec.refused_options[key]}; "
                f"accepted for {framework}: {', '.join(known) or '(none)'}",
                field=field,
                accepted=known,
            )
        if key not in known:
            return Rejection(
                "InvalidInput",
                f"{field}: not an option of the {framework} backend; "
                f"accepted: {', '.join(known) or '(none)'}",
                field=field,
                accepted=known,
            )
    try:
        spec.options.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else ""
        field = f"backendOptions.{key}"
        shown = repr(options.get(key))[:40]
        return Rejection(
            "InvalidInput",
            f"{field}: {shown} is not accepted: {error['msg']}",
            field=field,
            accepted=[error["msg"]],
        )
    return None


def invalid(problem: OutOfBounds, kind: RejectionKind = "InvalidInput") -> Rejection:
    return Rejection(kind, problem.message, field=problem.field, accepted=[problem.accepted])


def check_simple_fields(
    request: RunRequest, settings: Settings, framework: str, device: str
) -> Rejection | None:
    names = registry.backend_names()
    if framework not in names:
        return Rejection(
            "InvalidInput",
            f"framework: {framework!r} is not a backend; accepted: {', '.join(names)}",
            field="framework",
            accepted=names,
        )
    problem = request_problem(request, max_samples=settings.max_samples)
    if problem is not None:
        return rejected(problem)
    if len(device) > MAX_DEVICE_CHARS:
        return Rejection(
            "InvalidInput",
            f"device: at most {MAX_DEVICE_CHARS} characters, e.g. 'cpu' or 'cuda'",
            field="device",
            accepted=[f"at most {MAX_DEVICE_CHARS} characters"],
        )
    try:
        queues.inference_queue(framework, device)
    except ValueError as exc:
        return Rejection("InvalidInput", str(exc), field="device")
    runs_on = registry.spec_for(framework).devices
    if device.split(":")[0] not in runs_on:
        return Rejection(
            "InvalidInput",
            f"device: the {framework} backend does not run on {device!r}; "
            f"accepted: {', '.join(runs_on)}",
            field="device",
            accepted=list(runs_on),
        )
    if isinstance(request.backend_options, dict):
        # First: these limits are the deployment's settings, and their messages name them.
        spec = registry.spec_for(framework)
        out_of_bounds = settings_bounds_problem(request.backend_options, spec, settings)
        if out_of_bounds is not None:
            return invalid(out_of_bounds)
    return backend_options_problem(framework, request.backend_options)


def workload_choice(
    request: RunRequest, framework: str, manifest: ModelManifest
) -> tuple[Workload, dict[str, Any] | None] | Rejection:
    """The kind of measurement asked for (services/workloads/<name>/) and its options as
    stored (snake_case, bounded by its options model), or why they are refused."""
    if len(request.workloads) > 1:
        names = " and ".join(str(name) for name, _ in request.workloads)
        return Rejection(
            "InvalidInput",
            f"workload: give one kind of measurement, not {names}",
            field=str(request.workloads[-1][0]),
        )
    known = workloads()
    if request.workload not in known:
        return Rejection(
            "InvalidInput",
            f"workload: {request.workload[:MAX_WORKLOAD_NAME_CHARS]!r} is not a kind of "
            f"measurement; accepted: {', '.join(sorted(known))}",
            field="workload",
            accepted=sorted(known),
        )
    workload = known[request.workload]
    given = request.workloads[0][1] if request.workloads else None
    # Named by its typed shortcut (bricks, training) or the generic workloadOptions.
    field = workload.options_field
    reason = workload.accepts(framework, manifest)
    if reason is not None:
        return Rejection("InvalidInput", f"{field}: {reason}", field=field)
    if workload.options is None:
        if given:
            return Rejection(
                "InvalidInput",
                f"{field}: the {workload.name} workload takes no options",
                field=field,
            )
        return workload, None
    if given is not None and not isinstance(given, dict):
        return Rejection("InvalidInput", f"{field}: an object of options", field=field)
    try:
        options = workload.options.model_validate(snake_keys(dict(given or {})))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return Rejection(
            "InvalidInput", f"{field}.{where}: {error['msg']}", field=f"{field}.{where}"
        )
    dumped: dict[str, Any] = options.model_dump(mode="json")
    return workload, dumped
