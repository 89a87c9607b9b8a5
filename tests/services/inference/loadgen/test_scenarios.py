"""Every LoadGen scenario, briefly, through the real SUT and QSL."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.core.catalogue import resolve_model
from services.core.loadgen_logs import parse_summary
from services.core.scenario import SCENARIOS, ScenarioConfig
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.loadgen.settings import to_loadgen_settings
from services.inference.run import execute_run

TINY = "tests/fixtures/tiny_cnn.yaml"


def _null(service_time_ms: float = 1.0) -> Backend:
    backend = create_backend("null", BackendOptions(extra={"service_time_ms": service_time_ms}))
    backend.load(resolve_model(TINY))
    return backend


def _tensors(n: int = 32) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, 1, 32, 32)).astype(np.float32)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_runs_and_report_matches_loadgen_summary(scenario: str, tmp_path: Path) -> None:
    config = ScenarioConfig(
        scenario=scenario, min_duration_s=0.5, target_qps=100 if scenario == "server" else None
    )  # type: ignore[arg-type]
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=_null(),
        scenario=config,
        batch_size=4,
        log_dir=tmp_path,
        tensors=_tensors(),
    )
    summary = parse_summary((tmp_path / "mlperf_log_summary.txt").read_text())
    report = outcome.report
    assert report.scenario == summary["Scenario"]
    assert report.validity.result == summary["Result is"]
    expected_headline = {
        "offline": "Samples per second",
        "single-stream": "90.0th percentile latency (ns)",
        "multi-stream": "99.0th percentile latency (ns)",
        "server": "Completed samples per second",
    }[scenario]
    assert report.headline.name == expected_headline
    assert report.headline.value == summary[expected_headline]
    assert report.query_count > 0 and report.samples_per_second > 0
    assert report.latency.min_ns <= report.latency.percentiles_ns["p50"] <= report.latency.max_ns
    assert outcome.failed_samples == 0
    assert (tmp_path / "mlperf_log_detail.txt").exists()
    assert "sut_latencies_ns.npy" in outcome.log_files


def test_offline_throughput_matches_service_time(tmp_path: Path) -> None:
    # A 5 ms batch of 4 can do at most 800 samples/s; the harness must not invent more.
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=_null(service_time_ms=5.0),
        scenario=ScenarioConfig(scenario="offline", min_duration_s=0.5),
        batch_size=4,
        log_dir=tmp_path,
        tensors=_tensors(),
    )
    assert 400 < outcome.report.samples_per_second <= 800


class Exploding(Backend):
    name = "exploding"

    def version(self) -> str:
        return "0"

    """Fails on samples whose value is >= 4; warm-up only touches samples 0 and 1."""

    def load(self, manifest: object) -> None:
        pass

    def predict(self, batch: np.ndarray) -> np.ndarray:
        if batch.max() >= 4:
            raise RuntimeError("device lost")
        return np.zeros((len(batch), 10), np.float32)


@pytest.mark.parametrize("scenario", ["offline", "single-stream", "server"])
def test_failing_predict_still_completes_every_query(scenario: str, tmp_path: Path) -> None:
    backend = Exploding()
    backend.load(None)
    config = ScenarioConfig(
        scenario=scenario, min_duration_s=0.2, target_qps=50 if scenario == "server" else None
    )  # type: ignore[arg-type]
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=backend,
        scenario=config,
        batch_size=2,
        log_dir=tmp_path,
        tensors=np.arange(8, dtype=np.float32)[:, None, None, None]
        * np.ones((1, 1, 32, 32), np.float32),
    )
    assert 0 < outcome.failed_samples < outcome.report.sample_count
    assert outcome.errors[0] == "RuntimeError: device lost"


def test_torch_backend_runs_single_stream(tmp_path: Path) -> None:
    backend = create_backend("torch")
    manifest = resolve_model(TINY)
    backend.load(manifest)
    outcome = execute_run(
        manifest=manifest,
        backend=backend,
        scenario=ScenarioConfig(scenario="single-stream", min_duration_s=0.5),
        batch_size=1,
        log_dir=tmp_path,
        tensors=_tensors(),
    )
    assert outcome.report.query_count >= 32
    assert outcome.backend_info["name"] == "torch"


def test_framework_constraint_is_enforced(tmp_path: Path) -> None:
    manifest = resolve_model(TINY)
    data = manifest.to_dict()
    data["framework"] = {"name": "torch", "version": "<1.0"}
    from services.core.manifest import parse_manifest

    old_torch = parse_manifest(data)
    backend = create_backend("torch")
    with pytest.raises(Exception, match=r"framework.version: tiny-cnn:0.1.0 requires torch<1.0"):
        execute_run(
            manifest=old_torch,
            backend=backend,
            scenario=ScenarioConfig(),
            batch_size=1,
            log_dir=tmp_path,
            tensors=_tensors(),
        )


def test_scenario_config_errors_name_the_field() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="target_qps"):
        ScenarioConfig(scenario="server", target_qps=-1)
    with pytest.raises(ValidationError, match="scenario"):
        ScenarioConfig(scenario="batch")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_duration_s must be at least"):
        ScenarioConfig(min_duration_s=5, max_duration_s=1)


class ShortOutput(Backend):
    """Returns one row for any batch: a broken model that must not hang LoadGen."""

    name = "short"

    def version(self) -> str:
        return "0"

    def load(self, manifest: object) -> None:
        pass

    def warm_up(self, sample_batch: np.ndarray, iterations: int = 3) -> None:
        pass

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return np.zeros((1, 10), np.float32)


@pytest.mark.parametrize("mode", ["performance", "accuracy"])
@pytest.mark.timeout(60)
def test_wrong_sized_output_fails_the_samples_without_hanging(mode: str, tmp_path: Path) -> None:
    backend = ShortOutput()
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=backend,
        scenario=ScenarioConfig(scenario="offline", mode=mode, min_duration_s=0.2, target_qps=50),  # type: ignore[arg-type]
        batch_size=4,
        log_dir=tmp_path,
        tensors=_tensors(8),
        labels=[0] * 8,
    )
    assert outcome.failed_samples > 0
    assert "outputs[0]: 1 rows for a batch of 4" in outcome.errors[0]
    assert outcome.report.validity.result == "INVALID"


def test_a_run_whose_samples_fail_is_invalid_whatever_loadgen_says(tmp_path: Path) -> None:
    backend = Exploding()
    tensors = np.full((8, 1, 32, 32), 9.0, np.float32)
    tensors[:2] = 0.0  # warm-up uses samples 0 and 1, which succeed
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=backend,
        scenario=ScenarioConfig(scenario="single-stream", min_duration_s=0.2),
        batch_size=1,
        log_dir=tmp_path,
        tensors=tensors,
    )
    assert outcome.failed_samples > 0
    assert outcome.report.validity.result == "INVALID"
    assert any("failed in the backend" in r for r in outcome.report.validity.reasons)


class AsyncNull(Backend):
    """An asynchronous backend: completes from another thread, some requests with an error."""

    name = "async-null"
    asynchronous = True

    def version(self) -> str:
        return "0"

    def load(self, manifest: object) -> None:
        import concurrent.futures

        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return np.zeros((len(batch), 10), np.float32)

    def predict_async(self, batch: np.ndarray, callback: Any) -> None:
        def work() -> None:
            time.sleep(0.002)
            if batch.max() >= 6:
                callback(None, RuntimeError("remote said no"))
            else:
                callback(self.predict(batch), None)

        self.pool.submit(work)


@pytest.mark.parametrize("scenario", ["server", "multi-stream", "offline"])
def test_async_backend_completes_every_sample_before_results_are_read(
    scenario: str, tmp_path: Path
) -> None:
    backend = AsyncNull()
    backend.load(None)
    tensors = np.arange(8, dtype=np.float32)[:, None, None, None] * np.ones(
        (1, 1, 32, 32), np.float32
    )
    outcome = execute_run(
        manifest=resolve_model(TINY),
        backend=backend,
        scenario=ScenarioConfig(
            scenario=scenario, min_duration_s=0.3, target_qps=100, samples_per_query=4
        ),  # type: ignore[arg-type]
        batch_size=2,
        log_dir=tmp_path,
        tensors=tensors,
    )
    completed = sum(n for _, n in np.load(tmp_path / "sut_completions_ns.npy"))
    assert completed == outcome.report.sample_count
    assert 0 < outcome.failed_samples < completed
    assert outcome.errors[0] == "RuntimeError: remote said no"


def test_workers_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers: must be at least 1"):
        execute_run(
            manifest=resolve_model(TINY),
            backend=_null(),
            scenario=ScenarioConfig(),
            batch_size=1,
            log_dir=tmp_path,
            tensors=_tensors(),
            workers=0,
        )


def test_official_profile_takes_loadgens_own_mlperf_conf() -> None:
    def settings(**fields: Any) -> Any:
        return to_loadgen_settings(
            ScenarioConfig(**fields), measured_latency_s=0.01, measured_samples_per_s=100.0
        )

    quick = settings(scenario="multi-stream")
    official = settings(scenario="multi-stream", profile="official")
    assert quick.min_duration_ms == 5000 and quick.min_query_count == 32
    # mlperf.conf: 600 s and 662 MultiStream queries, and MLPerf's published seeds.
    assert official.min_duration_ms == 600_000 and official.min_query_count == 662
    assert official.qsl_rng_seed != 0 and official.schedule_rng_seed != quick.schedule_rng_seed
    resnet50 = to_loadgen_settings(
        ScenarioConfig(scenario="server", profile="official"),
        measured_latency_s=0.01,
        measured_samples_per_s=100.0,
        mlperf_model="resnet50",
    )
    assert resnet50.server_target_latency_ns == 15_000_000  # resnet50's own Server bound
    # What the user states still wins over the profile.
    assert (
        settings(scenario="offline", profile="official", min_duration_s=2).min_duration_ms == 2000
    )
