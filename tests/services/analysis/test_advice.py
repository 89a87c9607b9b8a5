"""Stack advice from real stored find-peak runs: the cheaper of two systems that meet the
bound, a system without a find-peak result named with its command, and the cost arithmetic."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from services.analysis.advice import advise, cost_per_million, load_reports
from services.campaigns.drive import find_peak
from services.cli.bench_options import BenchOptions
from services.cli.main import app
from services.core.campaigns.find_peak import SearchSettings
from services.embedded.bench import run_bench
from shared.db.session import session_scope
from shared.settings import Settings, get_settings

TINY = "tests/fixtures/tiny_cnn.yaml"
BOUND_MS = 100.0


def _measure(monkeypatch: pytest.MonkeyPatch, service_ms: str, price: str | None) -> float:
    """One system's find-peak (two probes long enough to be judged); returns its peak QPS."""
    if price is None:
        monkeypatch.delenv("BENCHSTACK_AGENT_PRICE_PER_HOUR", raising=False)
    else:
        monkeypatch.setenv("BENCHSTACK_AGENT_PRICE_PER_HOUR", price)
    get_settings.cache_clear()
    settings = get_settings()
    options = BenchOptions(
        model=TINY,
        framework="null",
        scenario="server",
        duration=2.0,
        samples=16,
        workers=2,
        option=[f"service_time_ms={service_ms}"],
    )
    result, _ = find_peak(
        options.request(),
        lambda r: run_bench(r, settings, local=options.local()),
        SearchSettings(BOUND_MS, start_qps=150.0, max_probes=2),
    )
    assert result.peak is not None, (result.reason, [p.reason for p in result.curve])
    return result.peak.qps


def test_advice_names_the_cheaper_system_and_the_unmeasured_one(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    cheap_qps = _measure(monkeypatch, "1", price="1.5")
    dear_qps = _measure(monkeypatch, "2", price="6.0")
    # A third system with a plain run only: no find-peak result.
    monkeypatch.delenv("BENCHSTACK_AGENT_PRICE_PER_HOUR", raising=False)
    get_settings.cache_clear()
    plain = BenchOptions(
        model=TINY, framework="null", scenario="single-stream", duration=0.3, samples=8,
        option=["service_time_ms=3"],
    ).request()  # fmt: skip
    run_bench(plain, get_settings())

    with session_scope(get_settings().effective_database_url) as session:
        reports = load_reports(session, "tiny-cnn")
    advice = advise(reports, model="tiny-cnn", latency_bound_ms=BOUND_MS, percentile=99)
    by_options = {s.settings["options"]["service_time_ms"]: s for s in advice.systems}
    cheap, dear, unmeasured = by_options[1.0], by_options[2.0], by_options[3.0]
    assert cheap.status == dear.status == "meets the bound"
    assert (cheap.qps, dear.qps) == (cheap_qps, dear_qps)
    assert cheap.cost_per_million == pytest.approx(1.5 / (cheap_qps * 3600) * 1e6)
    assert dear.cost_per_million == pytest.approx(6.0 / (dear_qps * 3600) * 1e6)
    assert advice.cheapest == cheap.system and cheap.system in advice.conclusion
    assert unmeasured.status == "no find-peak result"
    assert unmeasured.command.startswith(f"benchstack find-peak {TINY} -f null")
    assert "--latency-bound-ms 100 --percentile 99" in unmeasured.command
    assert any(line.startswith(unmeasured.system) for line in advice.missing)

    # A tighter bound than the probes were measured against: LoadGen never judged them for
    # it, so no figure is given for it, and the output says why.
    tighter = advise(reports, model="tiny-cnn", latency_bound_ms=50, percentile=99)
    assert tighter.cheapest is None
    assert all(s.status != "meets the bound" for s in tighter.systems)
    assert any("not against p99 <= 50 ms" in n for s in tighter.systems for n in s.notes)

    # The command, by the manifest path `bench` took, embedded.
    result = CliRunner().invoke(
        app, ["advise", TINY, "--latency-bound-ms", "100", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["cheapest"] == cheap.system


def test_cost_per_million_inferences() -> None:
    # 2 per hour at 100 QPS: 360 000 inferences an hour, so 1e6 cost 2 / 0.36.
    assert cost_per_million(2.0, 100.0) == pytest.approx(2.0 / 0.36)
    with pytest.raises(ValueError, match="qps"):
        cost_per_million(2.0, 0.0)
    with pytest.raises(ValueError, match="price_per_hour"):
        cost_per_million(-1.0, 10.0)


def test_a_bad_percentile_or_bound_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="--percentile: 98 is not reported"):
        advise([], model="m", latency_bound_ms=10, percentile=98)
    with pytest.raises(ValueError, match="--latency-bound-ms: -1"):
        advise([], model="m", latency_bound_ms=-1)


def test_a_restarted_agent_is_the_same_system(settings: Settings) -> None:
    """Agent ids end in the process id; the machine (host and queue) is what the runs and
    the price belong to, so restarts add no rows."""
    from services.analysis.systems import machine_of

    assert machine_of("gpu-7/benchstack.inference.host.gpu-7/4242") == (
        "gpu-7/benchstack.inference.host.gpu-7"
    )
    assert machine_of("local:laptop") == "local:laptop"
    reports = []
    for pid in ("101", "202"):
        report = {
            "agent_id": f"host-a/benchstack.inference.shared/{pid}",
            "framework": {"name": "null", "version": "1"},
            "settings": {"backend_options": {"device": "cpu"}},
            "performance": {"samples_per_second": 10.0},
        }
        reports.append(report)
    advice = advise(
        reports,
        model="tiny-cnn",
        latency_bound_ms=BOUND_MS,
        prices={"host-a/benchstack.inference.shared": 2.0},
    )
    (system,) = advice.systems
    assert system.machine == "host-a/benchstack.inference.shared"
    assert system.price_per_hour == 2.0
    assert system.status == "no find-peak result" and "2 runs" in system.notes[0]
