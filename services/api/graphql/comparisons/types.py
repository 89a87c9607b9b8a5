"""GraphQL types of the comparisons domain: a fan-out's evaluations, one row per agent."""

from __future__ import annotations

import strawberry

from services.api.comparison import Comparison, ComparisonRow


@strawberry.type(name="ComparisonRow")
class ComparisonRowType:
    evaluation_id: str
    state: str
    reason: str
    agent_id: str
    hostname: str
    cpu_model: str
    arch: str
    logical_cores: int | None
    memory_gib: float | None
    gpus: list[str]
    gpu_driver: str
    framework: str
    framework_version: str
    device: str
    # The agent's intra-op threads as applied to the backend; 0 = the framework's default.
    threads: int
    run_id: str | None
    samples_per_second: float | None
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p99_ms: float | None
    # LoadGen's VALID/INVALID and the stability verdict: shown beside every figure.
    validity: str
    stability: str

    @classmethod
    def from_row(cls, row: ComparisonRow) -> ComparisonRowType:
        return cls(**vars(row))


@strawberry.type(name="Comparison")
class ComparisonType:
    # The group id shared by the fan-out's evaluations; pass it to compare(groupId).
    id: str
    model: str
    scenario: str
    done: bool
    rows: list[ComparisonRowType]

    @classmethod
    def from_comparison(cls, comparison: Comparison) -> ComparisonType:
        return cls(
            id=comparison.group_id,
            model=comparison.model,
            scenario=comparison.scenario,
            done=comparison.done,
            rows=[ComparisonRowType.from_row(r) for r in comparison.rows],
        )
