import math

import pytest

from services.workloads.training.step_timing import summarise, timed_loop


def test_summary_follows_the_stated_definitions() -> None:
    steps = [0.5, 0.25, 0.5]
    stats = summarise(steps, [0.1, 0.05, 0.1], batch_size=10)
    rates = [20.0, 40.0, 20.0]
    mean = sum(rates) / 3
    std = math.sqrt(sum((r - mean) ** 2 for r in rates) / 2)
    assert stats.mean_images_per_s == pytest.approx(mean)
    assert stats.standard_error_images_per_s == pytest.approx(std / math.sqrt(3))
    assert stats.jitter == pytest.approx(0.25 / (1.25 / 3))
    assert stats.data_share == pytest.approx(0.25 / 1.25)


def test_no_measured_step_is_an_error_naming_steps() -> None:
    with pytest.raises(ValueError, match="steps"):
        summarise([], [], batch_size=1)


def test_timed_loop_runs_warmup_unmeasured_and_times_fetch_inside_the_step() -> None:
    fetched: list[int] = []
    trained: list[int] = []

    def fetch() -> int:
        fetched.append(len(fetched))
        return fetched[-1]

    step_seconds, data_seconds = timed_loop(2, 3, fetch, trained.append)
    assert fetched == trained == [0, 1, 2, 3, 4]  # every step fetched its own batch
    assert len(step_seconds) == len(data_seconds) == 3  # the 2 warm-up steps are not kept
    assert all(0 <= d <= s for d, s in zip(data_seconds, step_seconds, strict=True))
