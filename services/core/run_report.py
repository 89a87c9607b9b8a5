"""The one report of a run, for embedded and stack runs alike.

A run is judged once, where it was measured: the worker (or the embedded pipeline) turns
LoadGen's logs and what only it saw (failed samples, stability windows, accuracy, the
machine's load) into a ``Measurement`` and stores it beside the logs. ``assemble_report``
joins that with the request's ``RunSettings`` into a ``RunReport``; the aggregator stores
the report as it is and never parses a log or changes a verdict.

Stored reports are JSON (``to_dict``); readers get the typed form back with ``from_dict``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from services.core.metrics import AccuracyReport, LatencyStats, PerformanceReport, Stability

# Where one attempt at a run writes its files, embedded runs included (attempt 1): one
# layout, so a tool that reads a stack run's files reads an embedded run's the same way.
MEASUREMENT_FILE = "measurement.json"


def attempt_prefix(run_id: str, attempt: int) -> str:
    return f"runs/{run_id}/attempt-{attempt}"


def outcome_file(workload: str) -> str:
    """The file a workload without LoadGen logs (DLBricks, training) writes under its
    attempt's prefix: its outcome document."""
    return f"{workload}.json"


@dataclass(frozen=True)
class BackendSettings:
    """Framework-neutral knobs a backend ran with (a backend is made from them, checked, as
    services/inference/backend_interface.BackendOptions)."""

    device: str = "cpu"
    # 0 leaves the framework's own default.
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    # Backend-specific options, e.g. {"mode": "torchscript"} or {"url": "127.0.0.1:8001"}.
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunSettings:
    """What was asked for: with the stored manifest, all a rerun needs."""

    model: str
    framework: str
    scenario: dict[str, Any]  # ScenarioConfig as JSON
    batch_size: int
    dataset: str
    samples: int | None
    seed: int
    backend_options: BackendSettings
    workers: int = 1
    manifest_dir: str | None = None
    # Agent constraint terms of a stack submission ({"require": [...]}); empty embedded.
    constraints: dict[str, Any] = field(default_factory=dict)
    trace_level: str = "NONE"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSettings:
        options = data.get("backend_options") or {}
        return cls(
            **{
                **{k: v for k, v in data.items() if k in _RUN_SETTINGS_FIELDS},
                "backend_options": BackendSettings(
                    **{k: v for k, v in options.items() if k in _BACKEND_FIELDS}
                ),
            }
        )


@dataclass(frozen=True)
class Measurement:
    """A run as judged where it was measured; nothing downstream changes a verdict."""

    performance: PerformanceReport
    stability: Stability | None
    accuracy: AccuracyReport | None
    backend: dict[str, Any]  # the backend's describe(): name, version, device, ...
    sut_latency: LatencyStats
    failed_samples: int
    errors: list[str]
    warm_up: dict[str, float | None]
    seeds: dict[str, int]
    environment: dict[str, Any]
    # The host during the run: other processes' CPU use, load, overlapping measurements.
    host: dict[str, Any] = field(default_factory=dict)
    agent: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # An INVALID run's likely causes, most likely first.
    hints: list[str] = field(default_factory=list)
    # Samples that could not be prepared (file and reason), left out of the run.
    input_errors: list[str] = field(default_factory=list)
    # The leveled profile when a trace level above NONE was asked for (layer table,
    # coverage, each pass's figures and level); None otherwise.
    profile: dict[str, Any] | None = None
    # Wall clock around the measurement, never inside it: "model_load_s" (the cold start:
    # the backend's load), "loadgen_s", and the LoadGen run's "loadgen_started_at" /
    # "loadgen_ended_at" (Unix seconds), from which a worker's idle time between runs is
    # read (benchmarks/worker_idle.py).
    timings: dict[str, float] = field(default_factory=dict)
    # 95 % intervals of the figures over the run's stability windows
    # (services/core/confidence.py); None for accuracy runs and older runs.
    confidence: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        accuracy = data.get("accuracy")
        stability = data.get("stability")
        return cls(
            **{
                **{k: v for k, v in data.items() if k in _MEASUREMENT_FIELDS},
                "performance": _performance(data["performance"]),
                "stability": Stability.from_dict(stability) if stability else None,
                "accuracy": AccuracyReport(**accuracy) if accuracy else None,
                "sut_latency": _latency(data["sut_latency"]),
            }
        )


@dataclass(frozen=True)
class RunReport:
    run_id: str
    created_at: str
    model: dict[str, str]  # name, version
    settings: RunSettings
    measurement: Measurement
    dataset: dict[str, Any]  # name, samples, failed
    preprocessing: dict[str, Any]  # seconds, reused, shard(s)
    logs: dict[str, str]  # logical name -> object key
    log_prefix: str
    evaluation_id: str | None = None
    group: dict[str, Any] | None = None
    # Logical name -> where a person finds it (a file path, an s3:// URL).
    log_locations: dict[str, str] = field(default_factory=dict)

    @property
    def validity(self) -> str:
        return self.measurement.performance.validity.result

    def to_dict(self) -> dict[str, Any]:
        """The stored shape; top-level figures stay where readers of older runs find them."""
        m = self.measurement
        settings = asdict(self.settings)
        return json_safe(
            {
                "run_id": self.run_id,
                "evaluation_id": self.evaluation_id,
                "created_at": self.created_at,
                "model": self.model,
                "framework": m.backend | {"name": self.settings.framework},
                "scenario": self.settings.scenario.get("scenario", ""),
                "mode": self.settings.scenario.get("mode", "performance"),
                "batch_size": self.settings.batch_size,
                "settings": settings,
                "dataset": self.dataset,
                "preprocessing": self.preprocessing,
                "performance": m.performance.to_dict(),
                "stability": m.stability.to_dict() if m.stability else None,
                "confidence": m.confidence,
                "seeds": {"data": self.settings.seed, "loadgen": m.seeds},
                "group": self.group,
                "accuracy": m.accuracy.to_dict() if m.accuracy else None,
                "sut_latency": asdict(m.sut_latency),
                "warm_up": m.warm_up,
                "failed_samples": m.failed_samples,
                "errors": m.errors,
                "warnings": m.warnings,
                "hints": m.hints,
                "host": m.host,
                "agent": m.agent,
                "agent_id": m.agent.get("id", ""),
                "environment": m.environment,
                "profile": m.profile,
                "timings": m.timings,
                "logs": self.log_locations or self.logs,
                "log_keys": self.logs,
                "log_prefix": self.log_prefix,
            }
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunReport:
        backend = {k: v for k, v in (data.get("framework") or {}).items() if k != "name"}
        measurement = Measurement.from_dict(
            {
                **data,
                "backend": backend,
                "seeds": (data.get("seeds") or {}).get("loadgen", {}),
            }
        )
        return cls(
            run_id=data["run_id"],
            created_at=data.get("created_at", ""),
            model=data["model"],
            settings=RunSettings.from_dict(data["settings"]),
            measurement=measurement,
            dataset=data.get("dataset") or {},
            preprocessing=data.get("preprocessing") or {},
            logs=data.get("log_keys") or data.get("logs") or {},
            log_prefix=data.get("log_prefix", ""),
            log_locations=data.get("logs") or {},
            evaluation_id=data.get("evaluation_id"),
            group=data.get("group"),
        )


def assemble_report(
    *,
    run_id: str,
    model: dict[str, str],
    settings: RunSettings,
    measurement: Measurement,
    dataset: dict[str, Any],
    preprocessing: dict[str, Any],
    logs: dict[str, str],
    log_prefix: str,
    evaluation_id: str | None = None,
    group: dict[str, Any] | None = None,
    log_locations: dict[str, str] | None = None,
) -> RunReport:
    """The one way a report is made, in embedded mode and by the aggregator."""
    return RunReport(
        run_id=run_id,
        created_at=datetime.now(UTC).isoformat(),
        model=model,
        settings=settings,
        measurement=measurement,
        dataset=dataset,
        preprocessing=preprocessing,
        logs=logs,
        log_prefix=log_prefix,
        evaluation_id=evaluation_id,
        group=group,
        log_locations=log_locations or {},
    )


def json_safe(value: Any) -> Any:
    """Strict JSON: a figure LoadGen did not produce (NaN, inf) becomes null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _nan(value: Any) -> Any:
    """The inverse of json_safe for a figure: a stored null is NaN again."""
    return math.nan if value is None else value


def _latency(data: dict[str, Any]) -> LatencyStats:
    return LatencyStats(
        count=int(data.get("count") or 0),
        min_ns=_nan(data.get("min_ns")),
        mean_ns=_nan(data.get("mean_ns")),
        max_ns=_nan(data.get("max_ns")),
        percentiles_ns={k: _nan(v) for k, v in (data.get("percentiles_ns") or {}).items()},
    )


def _performance(data: dict[str, Any]) -> PerformanceReport:
    figures = ("qps", "samples_per_second", "duration_s", "scheduled_samples_per_second")
    headline = dict(data["headline"])
    headline["value"] = _nan(headline.get("value"))
    return PerformanceReport.from_dict(
        {
            **data,
            **{name: _nan(data.get(name)) for name in figures if name in data},
            "latency": asdict(_latency(data["latency"])),
            "headline": headline,
        }
    )


_RUN_SETTINGS_FIELDS = frozenset(RunSettings.__dataclass_fields__) - {"backend_options"}
_BACKEND_FIELDS = frozenset(BackendSettings.__dataclass_fields__)
_MEASUREMENT_FIELDS = frozenset(Measurement.__dataclass_fields__)
