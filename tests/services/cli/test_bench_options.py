"""BenchOptions: what bench, sweep and find-peak read from the command line, as one request."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from services.cli.bench_options import BenchOptions, parse_options
from services.core.request import scenario_of
from services.core.scenario import ScenarioConfig


def test_the_options_become_one_validated_request(data_dir: Path) -> None:
    options = BenchOptions(
        model="resnet18",
        framework="null",
        scenario="server",
        batch_size=4,
        duration=0.5,
        target_qps=120.0,
        seed=9,
        threads=2,
        workers=3,
        option=["fail_every=3", "mode=fast"],
    )
    request = options.request()
    assert (request.model, request.framework, request.batch_size) == ("resnet18", "null", 4)
    scenario = scenario_of(request)
    assert isinstance(scenario, ScenarioConfig)
    assert scenario.scenario == "server"
    assert (scenario.min_duration_s, scenario.target_qps) == (0.5, 120.0)
    # A seed fixes LoadGen's schedules too, so a rerun issues the same queries.
    assert scenario.schedule_rng_seed == 9
    assert request.threads == 2
    assert request.backend_options == {"fail_every": 3, "mode": "fast"}
    assert options.local().workers == 3


def test_what_a_command_does_not_offer_keeps_its_default(data_dir: Path) -> None:
    request = BenchOptions(model="resnet18").request()
    scenario = scenario_of(request)
    assert isinstance(scenario, ScenarioConfig)
    assert (scenario.scenario, scenario.mode) == ("offline", "performance")
    assert scenario.schedule_rng_seed is None  # seed 0: LoadGen's own
    assert request.backend_options == {}
    assert request.threads is None  # --threads 0: chosen for the scenario and the CPUs


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (BenchOptions(model="m", scenario="batch"), "--scenario: 'batch' is not accepted"),
        (BenchOptions(model="m", profile="fast"), "--profile: not accepted; accepted: quick"),
        (BenchOptions(model="m", option=["novalue"]), "--option: 'novalue' must look like"),
        (
            BenchOptions(model="m", preprocessing="turbo"),
            "--preprocessing: 'turbo' is not accepted; accepted: reference, fast",
        ),
        # The stack's bounds of a submission hold here too (services/core/request.py).
        (BenchOptions(model="m", threads=300), "--threads: must be at most 256"),
        (BenchOptions(model="m", batch_size=5000), "--batch-size: must be at most 4096"),
        (BenchOptions(model="m", seed=-1), "--seed: must be at least 0"),
        (BenchOptions(model="m", device="gpu"), "--device: 'gpu' is not accepted"),
        (BenchOptions(model="m", duration=-1.0), "--duration: Input should be greater than 0"),
        (
            BenchOptions(model="m", latency_bound_ms=0.0),
            "--latency-bound-ms: Input should be greater than 0",
        ),
    ],
)
def test_a_bad_option_exits_naming_it(
    options: BenchOptions, named: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit):
        options.request()
    assert named in capsys.readouterr().err


def test_preprocessing_is_read_in_any_case_and_left_to_the_manifest_when_absent(
    data_dir: Path,
) -> None:
    assert BenchOptions(model="m", preprocessing="FAST").request().preprocessing == "fast"
    assert BenchOptions(model="m").request().preprocessing is None


def test_backend_option_values_that_look_like_numbers_are_numbers() -> None:
    assert parse_options(["a=1", "b=0.5", "c=x=y"]) == {"a": 1, "b": 0.5, "c": "x=y"}


def test_from_params_takes_the_fields_among_a_commands_parameters() -> None:
    params = {"model": "resnet18", "batch_size": 4, "as_json": True, "repeats": 3}
    assert BenchOptions.from_params(params) == BenchOptions(model="resnet18", batch_size=4)


def test_from_params_leaves_out_names_meaning_something_else_and_fixes_others() -> None:
    # find-peak's --latency-bound-ms is the search's bound, not each probe's setting.
    params = {"model": "m", "latency_bound_ms": 20.0, "scenario": "offline", "seed": 5}
    options = BenchOptions.from_params(params, leave_out=("latency_bound_ms",), scenario="server")
    assert options == BenchOptions(model="m", scenario="server", seed=5)
    assert options.latency_bound_ms is None
