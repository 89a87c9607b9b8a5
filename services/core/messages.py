"""Messages between services: ids and object keys, never tensors.

Each task receives exactly one of these as a JSON object and validates it first, so a
malformed message fails loudly at the edge instead of deep inside a worker.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class EvaluationRequested(Message):
    """The API accepted an evaluation; the scheduler plans it."""

    evaluation_id: str


class PreprocessShard(Message):
    """Turn a slice of a dataset into a tensor shard stored under ``shard_key``."""

    evaluation_id: str
    shard_index: int = Field(ge=0)
    shard_key: str
    dataset: str
    dataset_count: int | None = None
    seed: int = 0
    sample_ids: list[str]
    # ModelManifest.inputs[0] as JSON: the preprocessing spec is part of the shard address.
    input_spec: dict[str, Any]
    batch_size: int = Field(ge=1)


class RunInference(Message):
    """Every shard is ready: measure the model on them."""

    evaluation_id: str
    run_id: str
    shard_keys: list[str]
    # Chosen at planning time; copied here so a worker needs no database to start.
    framework: str
    device: str
    batch_size: int = Field(ge=1)
    scenario: dict[str, Any]
    manifest: dict[str, Any]
    backend_options: dict[str, Any] = Field(default_factory=dict)
    # Intra-op threads asked for this run, over the agent's setting; None: not asked.
    threads: int | None = Field(default=None, ge=1)
    # XSP trace level (services.core.trace_levels.TRACE_LEVELS): above NONE the worker runs leveled
    # profiling passes after the uninstrumented run and stores trace.json with it.
    trace_level: str = "NONE"
    # The kind of measurement (services/workloads/<name>/: "loadgen", "bricks", "training")
    # and the options its submission gave (that workload's options model, as JSON).
    workload: str = "loadgen"
    workload_options: dict[str, Any] | None = None
    # A training evaluation that is one rank of a data-parallel gang (services/api/
    # training_scaling.py): {"gang", "rank", "world_size", "host_ranks", "local_rank"}
    # (local_rank since issue 33). None: alone.
    data_parallel: dict[str, Any] | None = None


class RunCompleted(Message):
    """A run finished; its logs, latencies and outcome wait in the object store."""

    evaluation_id: str
    run_id: str
    agent_id: str = ""
    log_prefix: str
    # Logical name -> object key: LoadGen's logs by file name, the raw per-query
    # latencies, and "measurement" (the judged run: figures, verdicts, host, environment).
    log_keys: dict[str, str]
