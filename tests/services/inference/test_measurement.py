"""PhaseClock: the wall clock of the phases around a measurement."""

from __future__ import annotations

import time

import pytest

from services.inference.measurement import PhaseClock


def test_a_phase_records_its_length_and_when_it_ran_even_when_it_fails() -> None:
    clock = PhaseClock()
    before = time.time()
    with clock.phase("model_load"):
        time.sleep(0.01)
    with pytest.raises(RuntimeError), clock.phase("loadgen"):
        raise RuntimeError("a run that fails still took its time")
    timings = clock.timings
    assert timings["model_load_s"] >= 0.01
    assert before <= timings["model_load_started_at"] < timings["model_load_ended_at"]
    assert timings["model_load_ended_at"] <= timings["loadgen_started_at"]
    # Unix seconds near 1.8e9 carry about 0.2 us of float precision.
    assert timings["loadgen_ended_at"] - timings["loadgen_started_at"] == pytest.approx(
        timings["loadgen_s"], abs=1e-5
    )
