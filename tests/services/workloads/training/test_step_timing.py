"""tf_cnn_benchmarks' statistics over step times: images/s = batch / mean step time (not the
mean of per-step rates), its delta-method standard error, and the MAD-based jitter."""

import math
import statistics

import pytest

from services.workloads.training.step_timing import StepLog, step_log, summarise, timed_loop


def test_images_per_second_is_batch_over_mean_step_time_not_a_mean_of_rates() -> None:
    steps = [0.5, 0.25, 0.5, 0.4]
    stats = summarise(steps, [0.1, 0.05, 0.1, 0.1], batch_size=10)
    mean_step = 1.65 / 4
    assert stats.images_per_s == pytest.approx(10 / mean_step)
    assert stats.images_per_s == pytest.approx(stats.total_images / stats.total_s)
    assert (stats.total_images, stats.total_s) == (40, pytest.approx(1.65))
    # The mean of the per-step rates (20, 40, 20, 25) is 26.25: biased upward.
    assert stats.images_per_s < sum(10 / s for s in steps) / 4
    assert stats.mean_step_s == pytest.approx(mean_step)
    assert stats.median_step_s == pytest.approx(0.45)
    assert stats.data_share == pytest.approx(0.35 / 1.65)


def test_standard_error_is_the_delta_method_on_the_mean_step_time() -> None:
    steps = [0.5, 0.25, 0.5, 0.4]
    stats = summarise(steps, [0.0] * 4, batch_size=10)
    se_step = statistics.stdev(steps) / math.sqrt(4)
    assert stats.standard_error_step_s == pytest.approx(se_step)
    assert stats.standard_error_images_per_s == pytest.approx(10 * se_step / (1.65 / 4) ** 2)


def test_jitter_is_tf_cnn_benchmarks_scaled_median_absolute_deviation_of_rates() -> None:
    # Rates 20, 40, 20, 25: median 22.5, absolute deviations 2.5, 17.5, 2.5, 2.5 -> 2.5.
    stats = summarise([0.5, 0.25, 0.5, 0.4], [0.0] * 4, batch_size=10)
    assert stats.jitter_images_per_s == pytest.approx(1.4826 * 2.5)


def test_one_step_has_no_spread() -> None:
    stats = summarise([0.2], [0.0], batch_size=4)
    assert stats.images_per_s == pytest.approx(20.0)
    assert stats.standard_error_images_per_s == 0.0 and stats.jitter_images_per_s == 0.0


@pytest.mark.parametrize(
    ("steps", "data", "field"),
    [([], [], "steps"), ([0.1], [], "data_seconds"), ([0.1, 0.0], [0.0, 0.0], "step_seconds")],
)
def test_bad_step_lists_are_refused_naming_the_field(
    steps: list[float], data: list[float], field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        summarise(steps, data, batch_size=1)


def test_timed_loop_runs_warmup_unmeasured_and_times_fetch_inside_the_step() -> None:
    fetched: list[int] = []
    trained: list[int] = []

    def fetch() -> int:
        fetched.append(len(fetched))
        return fetched[-1]

    timed = timed_loop(2, 3, fetch, trained.append)
    assert fetched == trained == [0, 1, 2, 3, 4]  # every step fetched its own batch
    assert len(timed.step_seconds) == len(timed.data_seconds) == 3  # no warm-up step kept
    assert all(0 <= d <= s for d, s in zip(timed.data_seconds, timed.step_seconds, strict=True))
    assert timed.log == []  # display_every 0: no progress line


def test_progress_lines_every_n_measured_steps_carry_the_figures_so_far_and_the_loss() -> None:
    shown: list[StepLog] = []
    losses = iter([9.0, 8.0, 3.0, 2.5, 2.0, 1.5, 1.0])
    timed = timed_loop(
        1, 6, lambda: None, lambda _: next(losses), batch_size=8, display_every=2, show=shown.append
    )
    assert [line.step for line in timed.log] == [2, 4, 6] and shown == timed.log
    # The loss of the step the line follows (warm-up consumed the first).
    assert [line.loss for line in timed.log] == [3.0, 2.0, 1.0]
    last = timed.log[-1]
    assert last.images_per_s == pytest.approx(8 / statistics.mean(timed.step_seconds))
    assert last == step_log(timed.step_seconds, 8, 1.0)
    assert last.line().startswith("6\timages/s: ") and "jitter = " in last.line()
    assert last.line().endswith("loss 1.000")
