"""Evaluations, their preprocessing shards, and the inference agents that run them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from shared.db.base import Base, JSONType
from shared.db.clock import utcnow
from shared.db.states import EvaluationState


class Agent(Base):
    """An inference worker consuming one queue; alive while its heartbeat is recent."""

    __tablename__ = "agents"
    # No index may name last_heartbeat, and half of each page is left free: a heartbeat
    # is then a heap-only update, which writes no index and leaves no row version for
    # vacuum (migration 0017; 110 heartbeats a second grew 200 rows by 3.5 MB a minute).
    __table_args__ = ({"postgresql_with": {"fillfactor": 50}},)

    # "<hostname>/<queue>/<pid>": one row per worker process and queue.
    id: Mapped[str] = mapped_column(String(300), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(200), index=True)
    queue: Mapped[str] = mapped_column(String(200), index=True)
    framework: Mapped[str] = mapped_column(String(50))
    framework_version: Mapped[str] = mapped_column(String(100))
    device: Mapped[str] = mapped_column(String(50))
    hardware: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    software: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # How the worker is set up, e.g. {"intra_op_threads": 2}; routed on like hardware.
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # The queue only this worker process consumes ("" for rows from before 0002).
    direct_queue: Mapped[str] = mapped_column(String(300), default="")
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_heartbeat: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Set while the agent holds a run (waiting for the host or measuring); None when idle.
    busy_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    def consumes(self, queue: str) -> bool:
        """Whether this agent takes messages from ``queue``: its framework's shared queue,
        its host's queue (``shared.queues.host_queue``) or its own direct queue."""
        return queue in (self.queue, f"{self.queue}@{self.hostname}", self.direct_queue)


class WorkerPresence(Base):
    """A worker process of any kind; alive while its heartbeat is recent. An evaluation
    waiting on a kind with no live worker says so in its reason."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(300), primary_key=True)  # "<node>/<pid>"
    kind: Mapped[str] = mapped_column(String(50), index=True)
    node: Mapped[str] = mapped_column(String(250))
    hostname: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_heartbeat: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Evaluation(Base):
    __tablename__ = "evaluations"
    # Migration 0015: the sweeper's pass, and a user's list newest first.
    __table_args__ = (
        Index("ix_evaluations_state_updated_at", "state", "updated_at"),
        Index("ix_evaluations_owner_id_created_at", "owner_id", "created_at", "id"),
        # Migration 0019: one evaluation per (user, client key).
        Index("uq_evaluations_owner_id_client_key", "owner_id", "client_key", unique=True),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    state: Mapped[str] = mapped_column(String(20), default=EvaluationState.QUEUED.value, index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    model_name: Mapped[str] = mapped_column(String(200), index=True)
    model_version: Mapped[str] = mapped_column(String(100))
    manifest: Mapped[dict[str, Any]] = mapped_column(JSONType)
    framework: Mapped[str] = mapped_column(String(50), index=True)
    device: Mapped[str] = mapped_column(String(50))
    scenario: Mapped[dict[str, Any]] = mapped_column(JSONType)
    batch_size: Mapped[int] = mapped_column(Integer)
    dataset: Mapped[str] = mapped_column(String(500))
    dataset_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    trace_level: Mapped[str] = mapped_column(String(20), default="NONE")
    constraints: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    backend_options: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # Intra-op threads asked for this evaluation (over the agent's own setting); None: the
    # agent's setting, else chosen for the scenario and the free CPUs. A find-peak pins its
    # probes to the first probe's count, so one search measures one system.
    threads: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The kind of measurement (services/workloads/<name>/): "loadgen" runs the scenario on
    # the dataset's shards; "bricks" and "training" read no dataset. Its options are those
    # the submission gave, as that workload's options model validated them (None: none).
    workload: Mapped[str] = mapped_column(String(40), default="loadgen", server_default="loadgen")
    workload_options: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    queue: Mapped[str] = mapped_column(String(200), default="")
    agent_id: Mapped[str | None] = mapped_column(String(300), nullable=True, index=True)
    run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # The inference attempt that holds the run (0: never claimed). Each delivery of
    # RunInference that claims it bumps this by compare-and-set and writes its logs under
    # runs/<run_id>/attempt-<n>/; only the holder may move the evaluation to AGGREGATING.
    attempt: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Times the sweeper dispatched this evaluation again after it stopped moving; past
    # MAX_DISPATCHES it is failed instead of looped.
    dispatches: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Times a run found a shard gone from the object store and sent the evaluation back
    # to have it prepared again (migration 0018; shared/db/lost_objects.py); at
    # lost_object_tries it is failed instead.
    replans: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The idempotency key the client sent with its submission (services/api/client_keys.py),
    # unique per owner: a retry with the same key reads this evaluation back. None: no key.
    # A fan-out's or gang's key is on its first member only.
    client_key: Mapped[str | None] = mapped_column(String(100), nullable=True)
    # Shared by the evaluations of one fan-out: they come back as one comparison.
    group_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    # What the group is beyond a fan-out (None): {"kind": "sweep", "parameter":
    # "batch_size", "value": 8} for one point of a sweep submitted through the API.
    group_info: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    shards_total: Mapped[int] = mapped_column(Integer, default=0)
    shards_ready: Mapped[int] = mapped_column(Integer, default=0)
    preprocess_reused: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    shards: Mapped[list[Shard]] = relationship(
        back_populates="evaluation", cascade="all, delete-orphan", order_by="Shard.index"
    )


class Shard(Base):
    __tablename__ = "shards"

    evaluation_id: Mapped[str] = mapped_column(
        ForeignKey("evaluations.id", ondelete="CASCADE"), primary_key=True
    )
    index: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Content address: hash of the sample ids and the preprocessing spec.
    key: Mapped[str] = mapped_column(String(200), index=True)
    sample_count: Mapped[int] = mapped_column(Integer)
    ready: Mapped[bool] = mapped_column(Boolean, default=False)
    # True when the object already existed at planning time, so no work was done.
    reused: Mapped[bool] = mapped_column(Boolean, default=False)

    evaluation: Mapped[Evaluation] = relationship(back_populates="shards")
