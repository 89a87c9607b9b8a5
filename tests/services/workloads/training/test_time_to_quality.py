import pytest

from services.workloads.training.time_to_quality import olympic_score, train_to_target


def test_olympic_score_drops_fastest_and_slowest() -> None:
    assert olympic_score([5.0, 1.0, 3.0, 100.0, 4.0]) == pytest.approx((3.0 + 4.0 + 5.0) / 3)


def test_olympic_score_needs_three_runs() -> None:
    with pytest.raises(ValueError, match="--runs"):
        olympic_score([1.0, 2.0])


def test_a_reachable_target_is_reached_and_an_impossible_one_is_not() -> None:
    reached = train_to_target(0.5, seed=0, max_epochs=5)
    assert reached.reached and reached.top1 >= 0.5 and reached.wall_s > 0
    missed = train_to_target(1.01, seed=0, max_epochs=1)
    assert not missed.reached and missed.epochs == 1
