"""Run.training: a stored training report's settings, images/s with its interval, the host
state, and its step times and progress lines bounded by a limit that is checked."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import GraphQLError

from services.workloads.training.graphql_types import TrainingType
from services.workloads.training.step_timing import step_log, summarise

STEPS = [0.05 + 0.001 * (i % 7) for i in range(30)]


def report(**extra: Any) -> dict[str, Any]:
    statistics = summarise(STEPS, [0.001] * len(STEPS), batch_size=4)
    document = {
        "kind": "training",
        "settings": {"model": "resnet18", "image_size": 64, "steps": 30, "batch_size": 4},
        "statistics": statistics.as_dict(),
        "step_seconds": STEPS,
        "log": [step_log(STEPS[:n], 4, 2.0 / n).as_dict() for n in (10, 20, 30)],
        "host": {"busy": True, "overlapped": False, "load": {"reason": "others used 1 CPU"}},
        **extra,
    }
    return {"kind": "training", "training": document}


def test_a_training_report_gives_its_figures_interval_and_host() -> None:
    training = TrainingType.from_report(report())
    assert training is not None
    statistics = training.statistics
    assert statistics.steps == 30 and statistics.low is not None and statistics.high is not None
    assert statistics.low < statistics.images_per_second < statistics.high  # type: ignore[operator]
    assert {s.key: s.value for s in training.settings}["image_size"] == "64"
    assert training.host is not None and training.host.busy is True
    assert training.host.busy_reason == "others used 1 CPU"


def test_step_times_and_log_lines_are_bounded_by_their_limit() -> None:
    training = TrainingType.from_report(report())
    assert training is not None
    every = training.step_times(limit=100)
    assert every.total_count == 30 and len(every.seconds) == 30 and not every.downsampled
    few = training.step_times(limit=5)
    assert few.total_count == 30 and len(few.seconds) == 5 and few.downsampled
    assert [line.step for line in training.log(limit=2)] == [20, 30]
    assert training.log(limit=10)[0].loss == pytest.approx(0.2)


@pytest.mark.parametrize("limit", [0, 20_001])
def test_a_limit_out_of_range_is_refused_naming_it(limit: int) -> None:
    training = TrainingType.from_report(report())
    assert training is not None
    with pytest.raises(GraphQLError) as refused:
        training.step_times(limit=limit)
    assert refused.value.extensions == {
        "code": "BAD_USER_INPUT",
        "field": "limit",
        "accepted": "1 to 20000",
    }


def test_a_run_of_another_kind_has_no_training() -> None:
    assert TrainingType.from_report({"kind": "bricks", "bricks": {}}) is None
    assert TrainingType.from_report(None) is None
