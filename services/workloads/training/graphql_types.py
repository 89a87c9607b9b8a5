"""The training workload's GraphQL surfaces (Workload.graphql_options_input and
graphql_result): the options a submission gives (``submitEvaluation(training: ...)``), and
a training run as the API shows it (``Run.training``): its settings, images/s with its 95 %
interval and jitter, the host it held, and its step times and progress lines, both bounded
by a ``limit``. Read from the document the run's report keeps (no file is read)."""

from __future__ import annotations

from typing import Any, cast

import strawberry
from strawberry.scalars import JSON

from services.core.stored_report import OutcomeReport, load_report
from services.workloads.graphql_fields import COUNTED_BY_PARENT, LIST_SIZE, bounded
from services.workloads.training.summary import (
    DEFAULT_LOG_LINES,
    DEFAULT_STEP_POINTS,
    MAX_LOG_LINES,
    MAX_STEP_POINTS,
    TRAINING_SETTINGS,
    images_interval,
    setting_pairs,
    step_times,
    workers_of,
)
from services.workloads.training.workload import WORKLOAD


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


@strawberry.input
class TrainingInput:
    """What ``submitEvaluation(training: ...)`` takes: options.TrainingOptions' fields."""

    steps: int = 20
    warmup: int = 3
    image_size: int = 224
    # fp32 or bf16; sgd or adam.
    precision: str = "fp32"
    optimizer: str = "sgd"


@strawberry.type(name="TrainingSetting")
class TrainingSettingType:
    key: str
    label: str
    value: str


@strawberry.type(name="TrainingStatistics")
class TrainingStatisticsType:
    steps: int
    # batch / mean step time (not a mean of per-step rates), its delta-method standard
    # error, and its 95 % interval (``method``); null with ``interval_reason`` when none.
    images_per_second: float | None
    standard_error: float | None
    low: float | None
    high: float | None
    interval_reason: str
    interval_method: str
    # 1.4826 x the MAD of per-step images/s (tf_cnn_benchmarks' jitter).
    jitter: float | None
    mean_step_ms: float | None
    median_step_ms: float | None
    standard_error_step_ms: float | None
    total_images: float | None
    total_s: float | None
    data_share: float | None

    @classmethod
    def from_dict(cls, statistics: dict[str, Any]) -> TrainingStatisticsType:
        interval = images_interval(statistics)

        def ms(key: str) -> float | None:
            value = statistics.get(key)
            return None if value is None else float(value) * 1000.0

        return cls(
            steps=int(statistics.get("steps") or 0),
            images_per_second=_float(statistics.get("images_per_s")),
            standard_error=_float(statistics.get("standard_error_images_per_s")),
            low=interval.low,
            high=interval.high,
            interval_reason=interval.reason,
            interval_method=interval.method,
            jitter=_float(statistics.get("jitter_images_per_s")),
            mean_step_ms=ms("mean_step_s"),
            median_step_ms=ms("median_step_s"),
            standard_error_step_ms=ms("standard_error_step_s"),
            total_images=_float(statistics.get("total_images")),
            total_s=_float(statistics.get("total_s")),
            data_share=_float(statistics.get("data_share")),
        )


@strawberry.type(name="TrainingHost")
class TrainingHostType:
    # Other processes kept the host's CPUs busy while it measured (null: not measured).
    busy: bool | None
    busy_reason: str
    # Another measurement ran on the same host meanwhile.
    overlapped: bool | None
    exclusive: bool | None
    waited_for_host_s: float | None
    threads: int | None

    @classmethod
    def from_dict(cls, host: dict[str, Any] | None) -> TrainingHostType | None:
        if not host:
            return None
        load = host.get("load") or {}
        threads = host.get("threads")
        return cls(
            busy=host.get("busy"),
            busy_reason=str(load.get("reason") or ""),
            overlapped=host.get("overlapped"),
            exclusive=host.get("exclusive"),
            waited_for_host_s=_float(host.get("waited_for_host_s")),
            threads=None if threads is None else int(threads),
        )


@strawberry.type(name="TrainingStepTimes")
class TrainingStepTimesType:
    total_count: int
    # As long as step_times' limit: its cost is counted there.
    steps: list[int] = strawberry.field(metadata={COUNTED_BY_PARENT: True})
    seconds: list[float] = strawberry.field(metadata={COUNTED_BY_PARENT: True})
    downsampled: bool
    method: str


@strawberry.type(name="TrainingLogLine")
class TrainingLogLineType:
    step: int
    images_per_second: float | None
    standard_error: float | None
    jitter: float | None
    loss: float | None


@strawberry.type(name="Training")
class TrainingType:
    settings: list[TrainingSettingType] = strawberry.field(
        metadata={LIST_SIZE: len(TRAINING_SETTINGS)}
    )
    statistics: TrainingStatisticsType
    host: TrainingHostType | None
    # Data-parallel ranks in the gang this run was one of; null for a run on its own.
    workers: int | None
    peak_rss_bytes: float | None
    cuda_max_allocated_bytes: float | None
    # What each figure means, as the run stated it.
    definitions: JSON
    document: strawberry.Private[dict[str, Any]]

    @strawberry.field(
        description="The run's measured step times in seconds: all of them up to `limit` "
        f"(1 to {MAX_STEP_POINTS}), else `limit` evenly spaced steps."
    )
    def step_times(self, limit: int = DEFAULT_STEP_POINTS) -> TrainingStepTimesType:
        limit = bounded("limit", limit, MAX_STEP_POINTS)
        found = step_times(list(self.document.get("step_seconds") or []), limit)
        return TrainingStepTimesType(**found.__dict__)

    @strawberry.field(
        description="The run's progress lines (every display_every steps): the last "
        f"`limit` (1 to {MAX_LOG_LINES})."
    )
    def log(self, limit: int = DEFAULT_LOG_LINES) -> list[TrainingLogLineType]:
        limit = bounded("limit", limit, MAX_LOG_LINES)
        lines = list(self.document.get("log") or [])[-limit:]
        return [
            TrainingLogLineType(
                step=int(line.get("step", 0)),
                images_per_second=_float(line.get("images_per_s")),
                standard_error=_float(line.get("standard_error_images_per_s")),
                jitter=_float(line.get("jitter_images_per_s")),
                loss=_float(line.get("loss")),
            )
            for line in lines
        ]

    @classmethod
    def from_report(cls, report: dict[str, Any] | None) -> TrainingType | None:
        """The training run a stored report holds (its "training" section); else None."""
        stored = load_report(report)
        if not isinstance(stored, OutcomeReport) or stored.kind != WORKLOAD.name:
            return None
        document = stored.document
        return cls(
            settings=[
                TrainingSettingType(key=k, label=lbl, value=v)
                for k, lbl, v in setting_pairs(document)
            ],
            statistics=TrainingStatisticsType.from_dict(document.get("statistics") or {}),
            host=TrainingHostType.from_dict(document.get("host")),
            workers=workers_of(document),
            peak_rss_bytes=_float(document.get("peak_rss_bytes")),
            cuda_max_allocated_bytes=_float(document.get("cuda_max_allocated_bytes")),
            definitions=cast(JSON, document.get("definitions") or {}),
            document=document,
        )
