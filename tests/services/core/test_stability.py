"""The stability verdict: synthetic timelines with a known answer, then a real LoadGen run."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from services.core.catalogue import resolve_model
from services.core.recorded_events import recorded_events
from services.core.scenario import ScenarioConfig
from services.core.stability import MIN_SERVER_SAMPLES, assess_stability
from services.inference.backend_interface import Backend
from services.inference.run import execute_run

MS = 1_000_000


def offline_timeline(batch_ms: list[float], batch: int = 8, workers: int = 1, offset: float = 0):
    """Completion events of ``workers`` in lockstep, each taking batch_ms[i] for batch i."""
    completions, latencies = [], []
    for worker in range(workers):
        t = offset * worker * MS
        for duration in batch_ms:
            t += duration * MS
            completions.append((int(t), batch))
            latencies += [int(t)] * batch  # Offline: latency is time since the one issue
    order = np.argsort([c[0] for c in completions], kind="stable")
    completions = [completions[i] for i in order]
    latencies = [lat for c in completions for lat in [c[0]] * c[1]]
    return completions, latencies, [0] * sum(c[1] for c in completions)


def test_steady_offline_is_stable_and_judged_on_throughput() -> None:
    completions, latencies, arrivals = offline_timeline([10.0] * 50)
    result = assess_stability(
        recorded_events(
            scenario="offline",
            completions=completions,
            latencies_ns=latencies,
            arrivals_ns=arrivals,
        )
    )
    assert result.verdict == "STABLE", result.reasons
    assert result.throughput_spread is not None and result.throughput_spread < 0.01
    assert result.latency_spread is None  # Offline latency is queue position, not judged
    assert sum(w.samples for w in result.windows) == 400


def test_slowdown_at_the_end_is_unstable() -> None:
    # The last fifth of the run takes twice as long per batch (thermal throttling, a noisy
    # neighbour): the last three windows disagree by far more than 10 %.
    completions, latencies, arrivals = offline_timeline([10.0] * 40 + [20.0] * 10)
    result = assess_stability(
        recorded_events(
            scenario="offline",
            completions=completions,
            latencies_ns=latencies,
            arrivals_ns=arrivals,
        )
    )
    assert result.verdict == "UNSTABLE"
    assert result.throughput_spread is not None and result.throughput_spread > 0.5
    assert "throughput varies" in result.reasons[0]


def test_lockstep_workers_are_not_cut_mid_cluster() -> None:
    # Two workers a third of a batch apart: windows must hold whole pairs of completions.
    completions, latencies, arrivals = offline_timeline([9.0] * 23, workers=2, offset=3.0)
    result = assess_stability(
        recorded_events(
            scenario="offline",
            completions=completions,
            latencies_ns=latencies,
            arrivals_ns=arrivals,
            concurrency=2,
        )
    )
    assert result.verdict == "STABLE"
    assert all(w.completions % 2 == 0 for w in result.windows[1:])
    assert result.throughput_spread is not None and result.throughput_spread < 0.02


def test_too_few_completions_is_insufficient_with_a_fix() -> None:
    completions, latencies, arrivals = offline_timeline([10.0] * 6)
    result = assess_stability(
        recorded_events(
            scenario="offline",
            completions=completions,
            latencies_ns=latencies,
            arrivals_ns=arrivals,
        )
    )
    assert result.verdict == "INSUFFICIENT"
    assert "run longer" in result.reasons[0]


def server_timeline(n: int, rate: float, service_ms: float, growth_ms: float = 0.0):
    """Evenly spaced arrivals; latency = service + growth * (fraction of the run elapsed)."""
    arrivals = [int(i * 1e9 / rate) for i in range(n)]
    latencies = [int((service_ms + growth_ms * i / n) * MS) for i in range(n)]
    completions = [(a + lat, 1) for a, lat in zip(arrivals, latencies, strict=True)]
    return completions, latencies, arrivals


def test_server_with_a_growing_queue_is_unstable_on_latency() -> None:
    completions, latencies, arrivals = server_timeline(1000, 200.0, 5.0, growth_ms=50.0)
    result = assess_stability(
        recorded_events(
            scenario="Server", completions=completions, latencies_ns=latencies, arrivals_ns=arrivals
        )
    )
    assert result.verdict == "UNSTABLE"
    assert any("median latency varies" in r for r in result.reasons)


def test_server_keeping_up_is_stable() -> None:
    completions, latencies, arrivals = server_timeline(1000, 200.0, 5.0)
    result = assess_stability(
        recorded_events(
            scenario="server", completions=completions, latencies_ns=latencies, arrivals_ns=arrivals
        )
    )
    assert result.verdict == "STABLE", result.reasons
    assert all(w.keep_up == pytest.approx(1.0, abs=0.02) for w in result.windows[1:])


def test_short_server_run_is_insufficient() -> None:
    completions, latencies, arrivals = server_timeline(MIN_SERVER_SAMPLES, 200.0, 5.0)
    result = assess_stability(
        recorded_events(
            scenario="server", completions=completions, latencies_ns=latencies, arrivals_ns=arrivals
        )
    )
    assert result.verdict == "INSUFFICIENT"


class SlowingDown(Backend):
    """Batch n completes 1 + growth * n ms after batch n-1: a run that never settles, or,
    with no growth, one that keeps one pace.

    Each call sleeps until its place on that schedule, not for a fixed time: a late
    wake-up on a busy host is made up by the next call, so a window's throughput is the
    schedule's to within one wake-up at its edges. Sleeping a fixed 1 ms a call let the
    host's wake-up delays add up; in CI one busy moment made three steady runs in a row
    20 % slower in one window."""

    name = "slowing"

    def __init__(self, growth: float) -> None:
        super().__init__()
        self.calls = 0
        self.growth = growth
        self.start = 0.0

    def version(self) -> str:
        return "0"

    def load(self, manifest: object) -> None:
        pass

    def predict(self, batch: np.ndarray) -> np.ndarray:
        if self.calls == 0:
            self.start = time.perf_counter()
        self.calls += 1
        n = self.calls
        # Sum over k = 1..n of (1 + growth * k) ms.
        due = self.start + (n + self.growth * n * (n + 1) / 2) / 1000
        time.sleep(max(0.0, due - time.perf_counter()))
        return np.zeros((len(batch), 10), np.float32)


@pytest.mark.parametrize(("growth", "verdict"), [(0.0, "STABLE"), (0.02, "UNSTABLE")])
def test_real_loadgen_run_gets_a_verdict(growth: float, verdict: str, tmp_path: Path) -> None:
    # Offline planned for 4000 samples/s x 0.5 s = 500 batches of 4 (a given target QPS
    # means no calibration probe, whose calls would also slow the backend down); growing
    # by 0.02 ms a call from 1 ms, the last batches take several times the first.
    outcome = execute_run(
        manifest=resolve_model("tests/fixtures/tiny_cnn.yaml"),
        backend=SlowingDown(growth),
        scenario=ScenarioConfig(scenario="offline", min_duration_s=0.5, target_qps=4000),
        batch_size=4,
        log_dir=tmp_path,
        tensors=np.zeros((16, 1, 32, 32), np.float32),
    )
    assert outcome.stability is not None
    assert outcome.stability.verdict == verdict, outcome.stability.reasons
    assert sum(w.samples for w in outcome.stability.windows) == outcome.report.sample_count
    assert "sut_completions_ns.npy" in outcome.log_files
