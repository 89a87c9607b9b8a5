"""What a stored training document shows: the images/s interval (Student's t over the
measured steps), step times cut down evenly for a chart, and its settings in order."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t

from services.workloads.training.step_timing import summarise
from services.workloads.training.summary import images_interval, setting_pairs, step_times

STEPS = [0.10, 0.12, 0.11, 0.30, 0.10, 0.11]


def test_the_interval_is_images_per_second_plus_minus_t_times_its_standard_error() -> None:
    statistics = summarise(STEPS, [0.0] * len(STEPS), batch_size=8).as_dict()
    interval = images_interval(statistics)
    half = t.ppf(0.975, len(STEPS) - 1) * statistics["standard_error_images_per_s"]
    assert interval.reason == ""
    assert interval.low == pytest.approx(statistics["images_per_s"] - half)
    assert interval.high == pytest.approx(statistics["images_per_s"] + half)
    # Wider than the normal approximation's 1.96 for six steps.
    assert half > 1.96 * statistics["standard_error_images_per_s"]


def test_one_step_has_no_interval_and_says_why() -> None:
    statistics = summarise([0.1], [0.0], batch_size=8).as_dict()
    interval = images_interval(statistics)
    assert interval.low is None and interval.high is None
    assert "2 steps or more" in interval.reason


def test_step_times_keep_every_step_up_to_the_limit_and_say_so() -> None:
    found = step_times(STEPS, limit=10)
    assert found.steps == [1, 2, 3, 4, 5, 6] and found.seconds == STEPS
    assert not found.downsampled and found.total_count == 6


def test_step_times_above_the_limit_are_evenly_spaced_with_first_and_last() -> None:
    seconds = [float(i) for i in range(1000)]
    found = step_times(seconds, limit=11)
    assert found.downsampled and found.total_count == 1000 and len(found.steps) == 11
    assert found.steps[0] == 1 and found.steps[-1] == 1000
    # Each point is the step it says it is.
    assert all(seconds[s - 1] == v for s, v in zip(found.steps, found.seconds, strict=True))
    gaps = {b - a for a, b in zip(found.steps, found.steps[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 1 and not math.isnan(found.seconds[0])


def test_settings_are_stated_in_order_and_a_missing_one_is_a_dash() -> None:
    document = {"settings": {"model": "resnet18", "image_size": 64, "optimizer": "adam"}}
    pairs = {key: value for key, _, value in setting_pairs(document)}
    assert pairs["image_size"] == "64" and pairs["optimizer"] == "adam"
    assert pairs["precision"] == "—"
    assert pairs["workers"] == "1"
    ranked = setting_pairs({**document, "data_parallel": {"world_size": 4}})
    assert dict((k, v) for k, _, v in ranked)["workers"] == "4"
