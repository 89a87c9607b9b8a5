"""Sweeps, repeats and reruns on the null backend (a SUT of known, fixed speed)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from services.aggregator.repository import get_run
from services.campaigns.rerun import request_from_run, rerun_stored
from services.cli.commands.sweep import parse_values
from services.core.campaigns import sweep
from services.core.campaigns.group import InvalidCampaign
from services.core.campaigns.repeats import Spread
from services.core.campaigns.rerun import SMALLEST_CHANGE_OF_INTEREST, compare
from services.core.environment_diff import diff_environments
from services.core.request import RunRequest, scenario_of
from services.embedded.bench import run_bench
from services.embedded.request import Local
from shared.db.session import session_scope
from shared.settings import Settings
from tests.support.cli import benchstack

TINY = "tests/fixtures/tiny_cnn.yaml"


def null_request(service_ms: float = 2.0, **scenario: Any) -> RunRequest:
    return RunRequest(
        model=TINY,
        framework="null",
        settings={"min_duration_s": 0.5, **scenario},
        samples=16,
        backend_options={"service_time_ms": service_ms},
    )


def test_batch_size_sweep_prints_and_stores_a_curve(data_dir: Path) -> None:
    result = benchstack(
        data_dir, "sweep", TINY, "-f", "null", "-o", "service_time_ms=2",
        "--batch-sizes", "1,2,4,8,16", "--duration", "0.3", "--samples", "16", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    curve = json.loads(result.stdout)
    points = curve["points"]
    assert [p["value"] for p in points] == [1, 2, 4, 8, 16]
    # A fixed 2 ms per batch: throughput grows with the batch (16x batch, >8x samples/s).
    assert points[-1]["samples_per_second"] > 8 * points[0]["samples_per_second"]
    assert all(p["validity"] in {"VALID", "INVALID"} for p in points)
    assert all(p["stability"] in {"STABLE", "UNSTABLE", "INSUFFICIENT"} for p in points)
    assert (data_dir / "objects" / "sweeps" / f"{curve['id']}.json").exists()
    listed = json.loads(benchstack(data_dir, "results", "--json").stdout)
    assert {p["run_id"] for p in points} <= {r["run_id"] for r in listed}


def test_sweep_values_and_scenarios_are_checked() -> None:
    with pytest.raises(ValueError, match=r"--batch-sizes: 'x' is not a number"):
        parse_values("1,x", "--batch-sizes")
    fields = ("--batch-sizes", "--batch-sizes")
    with pytest.raises(InvalidCampaign, match="--batch-sizes: 2 is listed twice"):
        sweep.plan("batch_size", parse_values("2,2", "--batch-sizes"), "offline", fields=fields)
    with pytest.raises(InvalidCampaign, match="--batch-sizes: 1.5; accepted: positive whole"):
        sweep.plan("batch_size", [1.5], "offline", fields=fields)
    with pytest.raises(InvalidCampaign, match="parameter: target_qps is a server setting"):
        sweep.plan("target_qps", [10.0], "offline")
    with pytest.raises(InvalidCampaign, match=r"values: 17 given; accepted: 1..16"):
        sweep.plan("batch_size", list(range(1, 18)), "offline")
    members = sweep.plan("target_qps", [10.0, 20.0], "server")
    assert [m.stored() for m in members] == [
        {"kind": "sweep", "id": members[0].id, "parameter": "target_qps", "value": v}
        for v in (10.0, 20.0)
    ]


def test_spread_is_min_median_max_and_cv() -> None:
    spread = Spread.from_values([10.0, 12.0, 11.0, 9.0, 13.0])
    assert (spread.min, spread.median, spread.max) == (9.0, 11.0, 13.0)
    assert spread.cv == pytest.approx(1.5811388 / 11.0)
    assert Spread.from_values([5.0]).count == 1


def test_repeats_give_a_spread_per_figure(data_dir: Path) -> None:
    result = benchstack(
        data_dir, "bench", TINY, "-f", "null", "-o", "service_time_ms=2", "--duration", "0.3",
        "--samples", "16", "--batch-size", "4", "--repeats", "3", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    runs, spread = payload["runs"], payload["spread"]
    assert len({r["run_id"] for r in runs}) == 3
    assert len({r["group"]["id"] for r in runs}) == 1
    sps = [r["performance"]["samples_per_second"] for r in runs]
    assert spread["samples_per_second"]["min"] == min(sps)
    assert spread["samples_per_second"]["max"] == max(sps)


def test_rerun_rebuilds_the_same_request(settings: Settings) -> None:
    request = replace(null_request(), seed=7, batch_size=4)
    report = run_bench(request, settings, local=Local(workers=2))
    with session_scope(settings.effective_database_url) as session:
        stored = get_run(session, report["run_id"])
        again, local = request_from_run(stored.id, stored.report, stored.manifest)
    assert scenario_of(again) == scenario_of(request)
    assert (again.batch_size, again.seed, local.workers) == (4, 7, 2)
    # The threads the run applied (chosen for the scenario: the request left them unset).
    applied = report["settings"]["backend_options"]["intra_op_threads"]
    assert applied >= 1 and again.threads == applied
    assert (again.device, again.backend_options) == ("cpu", request.backend_options)
    assert local.manifest is not None and local.manifest.to_dict() == stored.manifest


def test_rerun_of_a_steady_run_is_within_noise(settings: Settings) -> None:
    # 1.5 s (~480 samples): windows steady enough for a band of 5 %; a 0.5 s run's band is
    # wider, and its rerun rightly reads "inconclusive".
    request = null_request(service_ms=5.0)
    request = replace(request, settings={**request.settings, "min_duration_s": 1.5})
    original = run_bench(request, settings)
    comparison = rerun_stored(original["run_id"][:8], settings)
    # The same system is never judged changed.
    assert comparison.verdict != "outside noise", comparison.to_dict()
    wide = [f for f in comparison.figures if f.band > SMALLEST_CHANGE_OF_INTEREST]
    if wide:
        # A loaded host (CI's 2 cores under the whole suite) can widen a band past what a
        # user cares about: the verdict then says inconclusive and names the band.
        print("rerun bands widened by the host:", [(f.name, round(f.band, 3)) for f in wide])
        assert comparison.verdict == "inconclusive", comparison.to_dict()
        assert all("noise band" in f.explanation for f in wide)
    else:
        assert comparison.verdict == "within noise", comparison.to_dict()
    assert comparison.original_run == original["run_id"]
    # Same process, same machine: nothing that matters to the figures changed.
    assert not [d for d in comparison.environment_diff if not d.startswith("memory")]


def _perf(sps: float, windows: int = 5) -> dict[str, Any]:
    return {
        "run_id": "x",
        "performance": {
            "mode": "PerformanceOnly",
            "samples_per_second": sps,
            "latency": {"mean_ns": 1e6, "percentiles_ns": {"p50": 1e6, "p90": 1e6, "p99": 1e6}},
            "validity": {"result": "VALID"},
        },
        "stability": {
            "verdict": "STABLE",
            "windows": [{"samples_per_second": sps, "median_latency_ms": 1.0}] * windows,
        },
        "environment": {"python": "3.11.7", "packages": {"numpy": "2.0.0"}},
    }


def test_a_real_slowdown_is_outside_noise_and_environment_changes_are_named() -> None:
    slower = _perf(80.0)
    slower["environment"] = {"python": "3.11.7", "packages": {"numpy": "2.1.0"}}
    comparison = compare(_perf(100.0), [slower])
    assert comparison.verdict == "outside noise"
    delta = next(d for d in comparison.figures if d.name == "samples_per_second")
    assert delta.change == pytest.approx(-0.2) and not delta.within and not delta.better
    assert comparison.environment_diff == ["packages.numpy: 2.0.0 -> 2.1.0"]
    assert compare(_perf(100.0), [_perf(97.0)]).verdict == "within noise"


def test_environment_diff_lists_nested_changes() -> None:
    before = {"cpu": {"model": "A", "cores": 2}, "gpus": [{"name": "H100", "driver": "550"}]}
    after = {"cpu": {"model": "A", "cores": 4}, "gpus": [{"name": "H100", "driver": "560"}]}
    assert diff_environments(before, after) == [
        "cpu.cores: 2 -> 4",
        "gpus[0].driver: 550 -> 560",
    ]


def test_the_cli_refuses_out_of_bounds_campaigns_before_any_run(data_dir: Path) -> None:
    # The stack's bounds (services/core/campaigns), named as the CLI's options.
    repeats = benchstack(data_dir, "bench", TINY, "-f", "null", "--repeats", "21")
    assert repeats.returncode == 1
    assert "--repeats: 21; accepted: 2..20" in repeats.stderr
    points = ",".join(str(n) for n in range(1, 18))
    swept = benchstack(data_dir, "sweep", TINY, "-f", "null", "--batch-sizes", points)
    assert swept.returncode == 1
    assert "--batch-sizes: 17 given; accepted: 1..16 per sweep" in swept.stderr
    listed = benchstack(data_dir, "results", "--json")
    assert json.loads(listed.stdout) == []
