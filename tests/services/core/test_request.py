"""The run request both launchers build, and its checks, made once for both."""

from __future__ import annotations

import pytest

from services.api.submission_checks import graphql_name, rejected
from services.cli.bench_options import option_name
from services.core.request import (
    MAX_SEED,
    RequestProblem,
    RunRequest,
    request_problem,
    scenario_of,
)
from services.core.scenario import ScenarioConfig
from services.core.workload import MAX_BATCH_SIZE


@pytest.mark.parametrize(
    ("request_", "field", "accepted"),
    [
        (RunRequest(batch_size=0), "batch_size", f"1..{MAX_BATCH_SIZE}"),
        (RunRequest(batch_size=MAX_BATCH_SIZE + 1), "batch_size", f"1..{MAX_BATCH_SIZE}"),
        (RunRequest(samples=0), "samples", "1..100"),
        (RunRequest(samples=101), "samples", "1..100"),
        (RunRequest(seed=-1), "seed", f"0..{MAX_SEED}"),
        (RunRequest(threads=0), "threads", "1..256"),
        (RunRequest(trace_level="none"), "trace_level", "NONE"),
        (RunRequest(preprocessing="turbo"), "preprocessing", "reference"),
        (RunRequest(device="gpu"), "device", "cpu, cuda, cuda:<index>"),
        (RunRequest(backend_options=[1]), "backend_options", "an object"),
    ],
)
def test_each_plain_field_out_of_bounds_is_named_with_what_is_accepted(
    request_: RunRequest, field: str, accepted: str
) -> None:
    problem = request_problem(request_, max_samples=100)
    assert problem is not None and problem.field == field
    assert accepted in problem.accepted, problem


def test_a_request_within_bounds_has_no_problem() -> None:
    request = RunRequest(model="m", batch_size=8, samples=100, seed=MAX_SEED, threads=256)
    assert request_problem(request, max_samples=100) is None


def test_settings_are_read_in_either_spelling_and_a_bad_one_is_named() -> None:
    request = RunRequest(scenario="server", settings={"targetQps": 50, "min_duration_s": 1})
    scenario = scenario_of(request)
    assert isinstance(scenario, ScenarioConfig)
    assert (scenario.target_qps, scenario.min_duration_s) == (50, 1)
    assert request.named_settings == {"target_qps": 50, "min_duration_s": 1}
    unknown = scenario_of(RunRequest(settings={"speed": 1}))
    assert isinstance(unknown, RequestProblem) and unknown.field == "settings.speed"
    assert "target_qps" in unknown.accepted and unknown.kind == "InvalidScenarioSettings"
    scenario_named = scenario_of(RunRequest(scenario="batch"))
    assert isinstance(scenario_named, RequestProblem) and scenario_named.field == "scenario"
    assert scenario_named.accepted == ["offline", "single-stream", "multi-stream", "server"]
    not_an_object = scenario_of(RunRequest(settings=[1]))
    assert isinstance(not_an_object, RequestProblem) and not_an_object.field == "settings"


def test_each_launcher_names_the_field_as_its_users_type_it() -> None:
    problem = request_problem(RunRequest(batch_size=0), max_samples=100)
    assert problem is not None
    assert problem.said(graphql_name).startswith("batchSize: must be at least 1")
    assert problem.said(option_name).startswith("--batch-size: must be at least 1")
    rejection = rejected(problem)
    assert (rejection.kind, rejection.field) == ("InvalidInput", "batchSize")
    duration = scenario_of(RunRequest(settings={"min_duration_s": -1}))
    assert isinstance(duration, RequestProblem)
    assert duration.said(option_name).startswith("--duration: ")
    assert duration.said(graphql_name).startswith("settings.min_duration_s: ")
