"""Tables. Results are written only by the aggregator's repository (embedded mode calls it too)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from shared.db.base import Base, JSONType


def utcnow() -> datetime:
    return datetime.now(UTC)


class Run(Base):
    """One LoadGen run (a scenario in one mode) of one model on one backend."""

    __tablename__ = "runs"
    # Migration 0015: the runs lists and advice read the newest first.
    __table_args__ = (Index("ix_runs_created_at", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    evaluation_id: Mapped[str | None] = mapped_column(String(36), index=True, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    model_name: Mapped[str] = mapped_column(String(200), index=True)
    model_version: Mapped[str] = mapped_column(String(100))
    framework: Mapped[str] = mapped_column(String(50), index=True)
    framework_version: Mapped[str] = mapped_column(String(100))
    scenario: Mapped[str] = mapped_column(String(20))
    mode: Mapped[str] = mapped_column(String(20), default="performance")
    batch_size: Mapped[int] = mapped_column(Integer)
    dataset: Mapped[str] = mapped_column(String(500))
    validity: Mapped[str] = mapped_column(String(20))
    samples_per_second: Mapped[float | None] = mapped_column(Float, nullable=True)
    preprocess_reused: Mapped[bool] = mapped_column(Boolean, default=False)
    # Everything needed to reproduce and explain the run.
    manifest: Mapped[dict[str, Any]] = mapped_column(JSONType)
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType)
    environment: Mapped[dict[str, Any]] = mapped_column(JSONType)
    report: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # Object-store prefix holding LoadGen's logs and the raw per-query latencies.
    log_prefix: Mapped[str] = mapped_column(Text)

    metrics: Mapped[list[Metric]] = relationship(
        back_populates="run", cascade="all, delete-orphan", lazy="selectin"
    )


class Metric(Base):
    """One named figure of a run, as a row so that it can be filtered and compared in SQL."""

    __tablename__ = "metrics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(30))

    run: Mapped[Run] = relationship(back_populates="metrics")


# The other tables live in their own modules; importing them here registers every table on
# Base.metadata whenever anyone imports the models (init_schema and Alembic rely on that).
from shared.db import accounts, bricks, catalog, evaluations, request_spans  # noqa: E402, F401
