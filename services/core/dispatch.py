"""The messages that move an evaluation on, built from its fields: pure functions.

The scheduler task and the preprocess task both send ``RunInference`` (the plan when every
shard is stored already, the preprocess worker that completes the set); both build it here,
so neither task module imports the other. They read an evaluation through the
``EvaluationFields`` protocol, which the ORM row (shared/db/evaluations.Evaluation)
satisfies as it is, so core imports no ORM.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from services.core.messages import PreprocessShard, RunInference
from services.core.workload import DEFAULT_WORKLOAD


class EvaluationFields(Protocol):
    """What the messages read of an evaluation: the stored row's columns, read-only."""

    @property
    def id(self) -> str: ...
    @property
    def run_id(self) -> str | None: ...
    @property
    def framework(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def scenario(self) -> dict[str, Any]: ...
    @property
    def manifest(self) -> dict[str, Any]: ...
    @property
    def backend_options(self) -> dict[str, Any]: ...
    @property
    def threads(self) -> int | None: ...
    @property
    def trace_level(self) -> str: ...
    @property
    def workload(self) -> str: ...
    @property
    def workload_options(self) -> dict[str, Any] | None: ...
    @property
    def group_info(self) -> dict[str, Any] | None: ...
    @property
    def dataset(self) -> str: ...
    @property
    def dataset_count(self) -> int | None: ...
    @property
    def seed(self) -> int: ...


@dataclass(frozen=True)
class PlannedShard:
    """One shard of an evaluation's dataset, as the scheduler planned it."""

    index: int
    key: str
    sample_ids: list[str]


def run_id_for(evaluation_id: str) -> str:
    """Deterministic, so a redelivered plan names the same run (runs are keyed by it)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"benchstack:evaluation:{evaluation_id}"))


def inference_message(evaluation: EvaluationFields, shard_keys: list[str]) -> RunInference:
    return RunInference(
        evaluation_id=evaluation.id,
        run_id=evaluation.run_id or run_id_for(evaluation.id),
        shard_keys=shard_keys,
        framework=evaluation.framework,
        device=evaluation.device,
        batch_size=evaluation.batch_size,
        scenario=evaluation.scenario,
        manifest=evaluation.manifest,
        backend_options=evaluation.backend_options or {},
        threads=evaluation.threads,
        trace_level=evaluation.trace_level,
        # An Evaluation made in Python has no workload until it is inserted (the column's
        # default): it is the default kind.
        workload=evaluation.workload or DEFAULT_WORKLOAD,
        workload_options=evaluation.workload_options,
        data_parallel=data_parallel_of(evaluation),
    )


DATA_PARALLEL_KEYS = ("gang", "rank", "world_size", "host_ranks")
# Given to gangs from issue 33 on; a gang stored before has none (its rank assumes 0).
OPTIONAL_DATA_PARALLEL_KEYS = ("local_rank",)


def data_parallel_of(evaluation: EvaluationFields) -> dict[str, Any] | None:
    """A data-parallel rank's place in its gang, from a group record that places it (a
    training scaling's member: gang, rank, world_size, host_ranks); None else. Read from
    the record, not its kind's name: core sees no campaign registry."""
    info = evaluation.group_info or {}
    if not all(key in info for key in DATA_PARALLEL_KEYS):
        return None
    place = {key: info[key] for key in DATA_PARALLEL_KEYS}
    return place | {key: info[key] for key in OPTIONAL_DATA_PARALLEL_KEYS if key in info}


def shard_message(
    evaluation: EvaluationFields, shard: PlannedShard, spec_json: dict[str, Any]
) -> PreprocessShard:
    return PreprocessShard(
        evaluation_id=evaluation.id,
        shard_index=shard.index,
        shard_key=shard.key,
        dataset=evaluation.dataset,
        dataset_count=evaluation.dataset_count,
        seed=evaluation.seed,
        sample_ids=shard.sample_ids,
        input_spec=spec_json,
        batch_size=evaluation.batch_size,
    )
