"""Default intra-op threads: never more threads than free CPUs, the user's choice kept."""

from __future__ import annotations

import math

import pytest

from services.inference.threads import (
    choose_threads,
    default_threads,
)
from shared.host_load import NOISE_CPUS, occupied_cpus


def test_the_measured_case_one_busy_process_on_two_cpus_gives_one_thread() -> None:
    # The figure behind the rule: 496 ms p50 with 2 threads, 41 ms with 1.
    choice = default_threads(scenario="single-stream", usable_cpus=2, other_cpus=1.0)
    assert choice.threads == 1
    assert choice.reason == (
        "threads=1: single-stream on 2 usable CPUs, 1.0 CPUs busy with other work, "
        "1 free (one inference at a time)"
    )


@pytest.mark.parametrize("scenario", ["single-stream", "multi-stream", "offline", "server"])
def test_an_idle_machine_gives_every_usable_cpu_to_one_inference(scenario: str) -> None:
    assert default_threads(scenario=scenario, usable_cpus=8, other_cpus=0.0).threads == 8


@pytest.mark.parametrize(
    ("other", "occupied"),
    [(0.0, 0), (NOISE_CPUS, 0), (0.5, 1), (1.0, 1), (1.25, 2), (3.9, 4)],
)
def test_other_load_occupies_whole_cpus_once_past_the_noise(other: float, occupied: int) -> None:
    assert occupied_cpus(other) == occupied


@pytest.mark.parametrize(
    ("scenario", "workers", "threads"),
    [
        ("offline", 2, 3),  # 7 free CPUs: 2 pools of 3
        ("server", 4, 1),
        ("server", 1, 7),
        # One query at a time whatever --workers says: the pool may take every free CPU.
        ("single-stream", 4, 7),
        ("multi-stream", 4, 7),
    ],
)
def test_concurrent_workers_share_the_free_cpus(scenario: str, workers: int, threads: int) -> None:
    choice = default_threads(scenario=scenario, usable_cpus=8, other_cpus=0.6, workers=workers)
    assert choice.threads == threads
    assert choice.threads * (workers if scenario in {"offline", "server"} else 1) <= 7


def test_more_workers_than_free_cpus_is_named() -> None:
    choice = default_threads(scenario="server", usable_cpus=2, other_cpus=1.0, workers=3)
    assert choice.threads == 1
    assert "still oversubscribed: lower --workers to 1" in choice.reason


def test_a_fully_loaded_machine_still_gets_one_thread() -> None:
    choice = default_threads(scenario="offline", usable_cpus=2, other_cpus=5.0)
    assert choice.threads == 1


def test_unmeasured_load_counts_as_none_and_says_so() -> None:
    choice = default_threads(scenario="offline", usable_cpus=4, other_cpus=None)
    assert choice.threads == 4
    assert "other load unmeasured" in choice.reason


def test_the_users_threads_win_and_oversubscription_is_named() -> None:
    kept = choose_threads(requested=2, scenario="single-stream", usable_cpus=2, other_cpus=0.0)
    assert kept.threads == 2 and kept.reason == "threads=2: as asked (--threads)"
    crowded = choose_threads(requested=2, scenario="single-stream", usable_cpus=2, other_cpus=1.0)
    assert crowded.threads == 2
    assert "2 threads on 1 free CPU oversubscribe them" in crowded.reason
    assert "--threads 1" in crowded.reason
    chosen = choose_threads(requested=0, scenario="single-stream", usable_cpus=2, other_cpus=1.0)
    assert chosen.threads == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scenario": "streaming"}, "scenario"),
        ({"usable_cpus": 0}, "usable_cpus"),
        ({"workers": 0}, "workers"),
        ({"other_cpus": -0.5}, "other_cpus"),
        ({"other_cpus": math.nan}, "other_cpus"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    arguments: dict[str, object] = {
        "scenario": "offline",
        "usable_cpus": 2,
        "other_cpus": 0.0,
        "workers": 1,
        **kwargs,
    }
    with pytest.raises(ValueError, match=f"^{field}:"):
        default_threads(**arguments)  # type: ignore[arg-type]


def test_negative_requested_threads_are_refused() -> None:
    with pytest.raises(ValueError, match="^threads: must be 0"):
        choose_threads(requested=-1, scenario="offline", usable_cpus=2, other_cpus=0.0)
