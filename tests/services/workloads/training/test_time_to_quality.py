import pytest

from services.workloads.training.time_to_quality import (
    olympic_score,
    quality_record,
    train_to_target,
)


def test_olympic_score_drops_fastest_and_slowest() -> None:
    assert olympic_score([5.0, 1.0, 3.0, 100.0, 4.0]) == pytest.approx((3.0 + 4.0 + 5.0) / 3)


def test_olympic_score_needs_five_runs_as_mlperf_training_counts() -> None:
    with pytest.raises(ValueError, match="--runs"):
        olympic_score([1.0, 2.0, 3.0, 4.0])


def test_a_reachable_target_is_reached_and_an_impossible_one_is_not() -> None:
    reached = train_to_target(0.5, seed=0, max_epochs=5)
    assert reached.reached and reached.top1 >= 0.5 and reached.wall_s > 0
    missed = train_to_target(1.01, seed=0, max_epochs=1)
    assert not missed.reached and missed.epochs == 1


def test_a_record_with_a_run_that_missed_has_no_score_and_says_which() -> None:
    reached = train_to_target(0.5, seed=0, max_epochs=5)
    missed = train_to_target(1.01, seed=1, max_epochs=2)
    record = quality_record([reached] * 4 + [missed], 0.5, 5)
    assert record["olympic_score_s"] is None and "seeds [1]" in record["olympic_reason"]
    events = record["runs"][-1]["mllog"]
    assert [e["metadata"].get("epoch_num") for e in events if e["key"] == "eval_accuracy"] == [1, 2]
    assert events[-1]["key"] == "run_stop" and events[-1]["metadata"] == {"status": "aborted"}
    times = [e["time_ms"] for e in events]
    assert times == sorted(times)  # events in the order they happened
