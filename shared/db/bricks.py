"""DLBricks figures shared by every agent: brick timings per system, each system's floor,
and the recipes that say which bricks make a model.

A timing is keyed by the brick's signature (its layers' types, shapes and settings, never
weights) and the system (host, framework version, device, threads:
``services/workloads/bricks/measure.system_key``), so a later model reuses every brick a system has
measured, whoever's model first needed it, and a figure of another system is never mixed in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.base import Base, JSONType
from shared.db.clock import utcnow


class BrickTiming(Base):
    __tablename__ = "brick_timings"

    signature: Mapped[str] = mapped_column(String(100), primary_key=True)
    system: Mapped[str] = mapped_column(String(300), primary_key=True, index=True)
    # services/workloads/bricks/measure.Timing as a dict: median_ms, mean_ms, p90_ms, queries,
    # seconds.
    timing: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # The evaluation whose run measured it (None: measured by the embedded CLI).
    evaluation_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    measured_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BrickSystem(Base):
    """A system's floor: the latency of an empty brick through the same path; and its
    memory read cost (services/workloads/bricks/memory.py), null until measured."""

    __tablename__ = "brick_systems"

    system: Mapped[str] = mapped_column(String(300), primary_key=True)
    floor: Mapped[dict[str, Any]] = mapped_column(JSONType)
    memory: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BrickRecipe(Base):
    """Which bricks make a model, cut at one granularity for one input shape."""

    __tablename__ = "brick_recipes"

    model_name: Mapped[str] = mapped_column(String(200), primary_key=True)
    granularity: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The model's input shape, batch first, e.g. "1x3x224x224".
    input_shape: Mapped[str] = mapped_column(String(100), primary_key=True)
    recipe: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
