"""INVALID hints: each cause named, with the setting to move; consequences not repeated.

The LoadGen cases run real LoadGen against the null backend (a fixed service time), so
the validity and the early-stopping text are LoadGen's own; the rest build the run's
record directly, as the worker would pass it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from services.core.catalogue import resolve_model
from services.core.hints import LATENCY_REASON_PREFIX, invalid_hints
from services.core.metrics import Headline, LatencyStats, PerformanceReport, Validity
from services.core.scenario import ScenarioConfig
from services.inference.backend_interface import BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.run import execute_run
from shared.host_load import HostLoad, verdict

TINY = "tests/fixtures/tiny_cnn.yaml"


def _loadgen(tmp_path: Path, service_time_ms: float, **settings: Any) -> PerformanceReport:
    backend = create_backend("null", BackendOptions(extra={"service_time_ms": service_time_ms}))
    backend.load(resolve_model(TINY))
    tensors = np.random.default_rng(0).standard_normal((32, 1, 32, 32)).astype(np.float32)
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=backend,
        scenario=ScenarioConfig(**settings),
        batch_size=1,
        log_dir=tmp_path,
        tensors=tensors,
    )
    return outcome.report


def _report(
    scenario: str = "Server",
    *,
    reasons: tuple[str, ...] = (),
    min_duration_met: bool = True,
    min_queries_met: bool = True,
    early_stopping_met: bool | None = True,
    early_stopping_result: str = "",
    samples_per_second: float = 50.0,
    scheduled: float = 50.0,
    p99_ms: float = 20.0,
    query_count: int = 100,
    duration_s: float = 2.0,
) -> PerformanceReport:
    valid = not reasons and min_duration_met and min_queries_met and early_stopping_met is not False
    latency = LatencyStats.from_values([int(p99_ms * 1e6)] * 10)
    return PerformanceReport(
        scenario=scenario,
        mode="PerformanceOnly",
        validity=Validity(
            result="VALID" if valid else "INVALID",
            min_duration_met=min_duration_met,
            min_queries_met=min_queries_met,
            early_stopping_met=early_stopping_met,
            reasons=list(reasons),
            early_stopping_result=early_stopping_result,
        ),
        latency=latency,
        headline=Headline(name="", value=math.nan, unit=""),
        qps=samples_per_second,
        samples_per_second=samples_per_second,
        query_count=query_count,
        sample_count=query_count,
        samples_per_query=1,
        duration_s=duration_s,
        loadgen_version="test",
        scheduled_samples_per_second=scheduled,
    )


def _host(other_cpus: float, cpus: int = 2) -> HostLoad:
    share = other_cpus / cpus
    busy, reason = verdict(share, other_cpus, None, cpus)
    return HostLoad(
        wall_s=10.0,
        usable_cpus=cpus,
        total_cpu_s=None,
        own_cpu_s=0.0,
        other_cpu_s=other_cpus * 10.0,
        other_cpu_share=share,
        load_1m_start=None,
        load_1m_end=None,
        busy=busy,
        reason=reason,
    )


def test_a_valid_run_gets_no_hints() -> None:
    assert invalid_hints(report=_report(), settings=ScenarioConfig(scenario="server")) == []


def test_an_overloaded_server_is_told_to_lower_the_rate_not_to_run_longer(tmp_path: Path) -> None:
    # 20 ms per sample serves at most 50/s; 200/s arrive.
    report = _loadgen(tmp_path, 20.0, scenario="server", target_qps=200, min_duration_s=1)
    assert not report.validity.is_valid and report.validity.early_stopping_met is False
    hints = invalid_hints(report=report, settings=ScenarioConfig(scenario="server", target_qps=200))
    assert hints[0].startswith("Server: completed ")
    assert "(--target-qps 200): the system cannot keep up" in hints[0]
    assert "lower --target-qps below" in hints[0]
    assert not any("--duration" in h for h in hints), hints


def test_offline_faster_than_planned_is_told_the_target_qps_to_plan_with(tmp_path: Path) -> None:
    # LoadGen plans one query of 10/s x 0.5 s; the null backend does hundreds per second.
    settings = ScenarioConfig(scenario="offline", target_qps=10, min_duration_s=0.5)
    report = _loadgen(tmp_path, 1.0, **settings.model_dump(exclude_defaults=True))
    assert report.validity.min_duration_met is False
    hints = invalid_hints(report=report, settings=settings)
    assert len(hints) == 1
    suggested = math.ceil(report.samples_per_second * 1.5)
    assert hints[0].startswith("Offline: the run lasted ")
    assert f"from --target-qps 10, but the system did {report.samples_per_second:.1f}" in hints[0]
    assert hints[0].endswith(
        f"set --target-qps {suggested} (raising --duration alone does not help)"
    )


def test_a_run_cut_by_max_duration_names_it(tmp_path: Path) -> None:
    settings = ScenarioConfig(scenario="single-stream", min_duration_s=0.3, max_duration_s=0.4)
    report = _loadgen(tmp_path, 50.0, **settings.model_dump(exclude_defaults=True))
    assert report.validity.min_queries_met is False
    hints = invalid_hints(report=report, settings=settings)
    assert hints[0].startswith(f"only {report.query_count} queries ran where 32 are required")
    assert "--max-duration 0.4 s cut the run short" in hints[0]
    # LoadGen's early-stopping count (64 for p90) and this run's pace give the duration.
    assert "early stopping needs at least 64 queries" in hints[1]
    assert "raise --duration and --max-duration (0.4 s now) to at least" in hints[1]


def test_early_stopping_gets_the_duration_that_holds_its_queries(tmp_path: Path) -> None:
    settings = ScenarioConfig(scenario="multi-stream", min_duration_s=0.3)
    report = _loadgen(tmp_path, 2.0, **settings.model_dump(exclude_defaults=True))
    assert report.validity.early_stopping_met is False
    hints = invalid_hints(report=report, settings=settings)
    assert len(hints) == 1
    per_query_s = report.duration_s / report.query_count
    needed = int(report.validity.early_stopping_result.split("at least ")[1].split()[0])
    seconds = math.ceil(needed * per_query_s * 1.1)
    assert hints[0].endswith(f"raise --duration to at least {seconds} s")
    assert seconds > 0.3  # more than the run had: the hint asks for a real change


def test_server_early_stopping_counts_the_more_queries_loadgen_asks_for() -> None:
    report = _report(
        early_stopping_met=False,
        early_stopping_result="* Run unsuccessful. * Processed 100 queries. "
        "* Would need to run at least 900 more queries, with the run being successful",
        scheduled=50.0,
    )
    hints = invalid_hints(report=report, settings=ScenarioConfig(scenario="server"))
    # 1000 queries at the scheduled 50/s: 20 s, and a tenth more.
    assert hints == [
        "early stopping needs at least 1000 queries for its percentile estimate and the run "
        "had 100 (20.0 ms each): raise --duration to at least 22 s"
    ]


def test_a_server_that_kept_up_over_its_bound_is_told_about_latency_not_duration() -> None:
    report = _report(
        reasons=(f"{LATENCY_REASON_PREFIX}: the percentile exceeds the target latency",),
        early_stopping_met=False,
        p99_ms=180.0,
    )
    settings = ScenarioConfig(scenario="server", target_qps=50, target_latency_ms=100)
    hints = invalid_hints(report=report, settings=settings)
    assert hints == [
        "Server kept up but its p99 180.0 ms is over the 100 ms bound: lower --target-qps or "
        "--batch-size (a batch waits to fill), or raise --latency-bound-ms if the bound is "
        "yours to choose"
    ]


def test_a_short_server_run_draining_its_last_arrivals_is_not_called_behind() -> None:
    # 1 s of schedule with a 100 ms bound: completing 93 % of the rate is only the drain.
    report = _report(
        reasons=(f"{LATENCY_REASON_PREFIX}: x",), samples_per_second=46.5, query_count=50
    )
    settings = ScenarioConfig(scenario="server", target_qps=50, target_latency_ms=100)
    assert invalid_hints(report=report, settings=settings)[0].startswith("Server kept up")
    without_bound = ScenarioConfig(scenario="server", target_qps=50)
    assert invalid_hints(report=report, settings=without_bound)[0].startswith("Server kept up")
    far_behind = replace(report, samples_per_second=30.0)
    assert invalid_hints(report=far_behind, settings=without_bound)[0].startswith(
        "Server: completed 30.0 samples/s of the 50.0 scheduled"
    )


def test_failed_samples_come_first_and_silence_the_timing_checks() -> None:
    report = _report("Offline", min_duration_met=False)
    hints = invalid_hints(
        report=report,
        settings=ScenarioConfig(scenario="offline"),
        failed_samples=3,
        first_error="RuntimeError: shape mismatch",
    )
    assert hints == [
        "3 of 100 samples failed in the backend: RuntimeError: shape mismatch; fix that first "
        "(see the run's errors): timings over failures mean nothing"
    ]


def test_failed_samples_make_even_a_loadgen_valid_run_hinted() -> None:
    hints = invalid_hints(
        report=_report(), settings=ScenarioConfig(scenario="server"), failed_samples=2
    )
    assert len(hints) == 1 and hints[0].startswith("2 of 100 samples failed")


def test_a_busy_machine_is_named_first() -> None:
    report = _report("SingleStream", early_stopping_met=False, early_stopping_result="")
    hints = invalid_hints(
        report=report, settings=ScenarioConfig(scenario="single-stream"), host_load=_host(0.85)
    )
    assert hints[0] == (
        "the machine was busy: other processes used 0.85 CPU-s per s (42% of 2 CPUs) during "
        "the run; rerun on an idle machine"
    )
    assert hints[1].startswith("early stopping: too few queries")


def test_a_quiet_machine_is_not_named() -> None:
    report = _report("SingleStream", early_stopping_met=False)
    hints = invalid_hints(
        report=report, settings=ScenarioConfig(scenario="single-stream"), host_load=_host(0.05)
    )
    assert not any("busy" in h for h in hints)


def test_more_threads_than_free_cpus_is_named_with_the_count_that_fits() -> None:
    # The measured case: 2 threads on 2 CPUs while another process kept one busy.
    report = _report("SingleStream", early_stopping_met=False, query_count=10, duration_s=5.0)
    hints = invalid_hints(
        report=report,
        settings=ScenarioConfig(scenario="single-stream"),
        host_load=_host(1.0),
        threads=2,
    )
    assert hints[1] == (
        "2 intra-op threads on 1 free CPU oversubscribe them, so each operator waits for a "
        "descheduled thread; rerun with --threads 1"
    )
    fitting = invalid_hints(
        report=report,
        settings=ScenarioConfig(scenario="single-stream"),
        host_load=_host(1.0),
        threads=1,
    )
    assert not any("oversubscribe" in h for h in fitting)


def test_offline_workers_multiply_the_threads() -> None:
    report = _report("Offline", min_duration_met=False, samples_per_second=100.0)
    hints = invalid_hints(
        report=report,
        settings=ScenarioConfig(scenario="offline"),
        host_load=_host(0.0, cpus=4),
        threads=2,
        workers=4,
    )
    assert hints[0].startswith("2 intra-op threads x 4 workers on 4 free CPUs oversubscribe")
    assert hints[0].endswith("rerun with --threads 1")
    assert "from the warm-up's estimate" in hints[1]


def test_a_run_stopped_by_max_queries_names_it() -> None:
    report = _report("SingleStream", min_duration_met=False, query_count=20)
    settings = ScenarioConfig(scenario="single-stream", max_query_count=20)
    assert invalid_hints(report=report, settings=settings) == [
        "the run lasted 2.00 s of the 5 s required: it stopped at --max-queries 20; "
        "raise or drop it"
    ]


def test_min_queries_without_a_cap_asks_for_the_duration_that_holds_them() -> None:
    report = _report("SingleStream", min_queries_met=False, query_count=10, duration_s=5.0)
    hints = invalid_hints(report=report, settings=ScenarioConfig(scenario="single-stream"))
    # 32 queries at 0.5 s each, and a tenth more.
    assert hints == [
        "only 10 queries ran where 32 are required: raise --duration (about 17.6 s at this "
        "rate) or lower --min-queries"
    ]


def test_an_unknown_cause_falls_back_to_loadgens_words() -> None:
    report = _report(reasons=("LoadGen: something new",))
    assert invalid_hints(report=report, settings=ScenarioConfig(scenario="server")) == [
        "LoadGen: something new"
    ]
    bare = replace(report, validity=replace(report.validity, reasons=[]))
    assert invalid_hints(report=bare, settings=ScenarioConfig(scenario="server")) == [
        "LoadGen reported INVALID without a reason we recognise; see its detail log"
    ]


def test_the_latency_reason_prefix_is_what_metrics_writes() -> None:
    # hints.py finds LoadGen's latency check by the words services/core/metrics.py gives it.
    summary = "Scenario : Server\nResult is : INVALID\nPerformance constraints satisfied : NO\n"
    report = PerformanceReport.from_logs(summary, "")
    assert any(r.startswith(LATENCY_REASON_PREFIX) for r in report.validity.reasons)
