"""What the edges ask a workload instead of its name (services/core/workload.Workload:
options_field, runs_scenario, data_parallel, judged_by_loadgen, fan_out_figures): the three
kinds of today declare what their names used to decide, and a throw-away workload folder
that declares none of them gets the defaults at every edge that reads them."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import services.workloads as workloads_package
from services.api import fan_out
from services.api.campaigns.find_peak.group import submit_find_peak
from services.api.campaigns.groups import one_evaluation_problem, request_of
from services.api.campaigns.training_scaling.group import submit_training_scaling
from services.api.rejections import Rejection
from services.api.submission_checks import setup_allowance_s, workload_choice
from services.api.submission_request import Submission
from services.api.user_quota import run_bound_s
from services.cli.comparison import _is_training
from services.core.campaigns.find_peak import SearchSettings
from services.core.manifest import load_manifest
from services.workloads import workload_named, workloads
from shared.db.evaluations import Evaluation
from tests.support.throwaway_workload import workload_source

TINY = "tests/fixtures/tiny_cnn.yaml"
SUMMARY = "a throw-away workload that declares nothing the edges ask"
CONFIDENCE = {
    "figures": {
        "samples_per_second": {"low": 90.0, "high": 110.0},
        "latency_p99": {"low": 1.0, "high": 2.0},
    }
}


@pytest.fixture
def dropped() -> Iterator[str]:
    """A workload folder dropped into services/workloads/ for the test, removed after."""
    name = f"echo{uuid.uuid4().hex[:8]}"
    folder = Path(workloads_package.__file__).parent / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "workload.py").write_text(workload_source(name, SUMMARY))
    workloads.cache_clear()
    try:
        yield name
    finally:
        shutil.rmtree(folder)
        workloads.cache_clear()


def test_todays_kinds_declare_what_their_names_decided() -> None:
    loadgen, bricks, training = (workload_named(n) for n in ("loadgen", "bricks", "training"))
    assert [w.options_field for w in (loadgen, bricks, training)] == [
        "workloadOptions",
        "bricks",
        "training",
    ]
    assert [w.runs_scenario for w in (loadgen, bricks, training)] == [True, False, False]
    assert [w.data_parallel for w in (loadgen, bricks, training)] == [False, False, True]
    assert [w.judged_by_loadgen for w in (loadgen, bricks, training)] == [True, True, False]
    assert loadgen.fan_out_figures is None and bricks.fan_out_figures is None
    assert training.fan_out_figures == "services.workloads.training.summary:fan_out_figures"


def test_the_refusals_name_the_kinds_as_before() -> None:
    """The messages are made from the registry now; for today's kinds they read as the
    ones written out by hand did."""
    training = Submission(workloads=(("training", {}),))
    problem = one_evaluation_problem(training, "repeats run one model")
    assert isinstance(problem, Rejection)
    assert problem.message == (
        "evaluation: repeats run one model; fanOut, bricks, generative and training "
        "are not accepted"
    )
    found = submit_find_peak(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        owner_id=1,
        base=Submission(fan_out=True),
        search=SearchSettings(latency_bound_ms=10.0),
    )
    assert isinstance(found, Rejection) and found.message == (
        "evaluation: find-peak searches one model on one agent; fanOut, bricks, generative and "
        "training are not accepted"
    )
    scaling = submit_training_scaling(
        None,
        None,
        None,
        owner_id=1,
        base=Submission(),
        world_sizes=[1, 2],  # type: ignore[arg-type]
    )
    assert isinstance(scaling, Rejection) and scaling.message == (
        "evaluation: scaling runs a training evaluation (give training options); bricks, "
        "generative and fanOut are not accepted"
    )
    assert one_evaluation_problem(Submission(), "repeats run one model") is None


def test_a_group_stored_before_0011_reads_its_typed_key_back() -> None:
    stored = {"request": {"model": "m", "training": {"steps": 3}, "bricks": None}}
    request = request_of(Evaluation(group_info=stored))
    assert request.workloads == (("training", {"steps": 3}),)


def test_a_dropped_in_workload_gets_the_defaults(dropped: str) -> None:
    workload = workload_named(dropped)
    assert (workload.options_field, workload.runs_scenario, workload.data_parallel) == (
        "workloadOptions",
        False,
        False,
    )
    assert workload.judged_by_loadgen and workload.fan_out_figures is None
    request = Submission(workloads=((dropped, {"repeats": 9}),))
    # Its options are named as the generic input's.
    refused = workload_choice(request, "torch", load_manifest(TINY))
    assert isinstance(refused, Rejection) and refused.field == "workloadOptions.repeats"
    # Campaigns that vary a scenario refuse it, and so does training scaling, naming it
    # among the kinds they do not take.
    problem = one_evaluation_problem(request, "a sweep varies one setting")
    assert isinstance(problem, Rejection) and "bricks" in problem.message
    scaling = submit_training_scaling(
        None,
        None,
        None,
        owner_id=1,
        base=request,
        world_sizes=[1],  # type: ignore[arg-type]
    )
    assert isinstance(scaling, Rejection) and scaling.field == "evaluation"
    # Its scenario's max_duration_s does not bound it: the run limit does (LoadGen's does).
    assert run_bound_s({"max_duration_s": 5}, dropped, 600.0) == 600.0
    assert run_bound_s({"max_duration_s": 5}, "loadgen", 600.0) == 5 + setup_allowance_s(600.0)
    # Its fan-out row reads LoadGen's intervals; the CLI judges it as LoadGen's.
    figures = fan_out._figures_of({"kind": dropped, "confidence": CONFIDENCE})
    assert (figures["samples_per_second_low"], figures["latency_p99_high_ms"]) == (90.0, 2.0)
    assert not _is_training({"workload": dropped})
    assert _is_training({"workload": "training"})
