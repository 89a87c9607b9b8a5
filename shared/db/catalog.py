"""Registered models (manifests, one row per name and version) and datasets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    or_,
)
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.base import Base, JSONType
from shared.db.clock import utcnow


class RegisteredModel(Base):
    __tablename__ = "models"
    # A version is unique per owner: names of private models are each owner's own (a
    # refusal across users would tell one user that another's private model exists).
    __table_args__ = (
        UniqueConstraint("owner_id", "name", "version", name="uq_models_owner_name_version"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    version: Mapped[str] = mapped_column(String(100))
    framework: Mapped[str] = mapped_column(String(50))
    manifest_yaml: Mapped[str] = mapped_column(Text)
    manifest: Mapped[dict[str, Any]] = mapped_column(JSONType)
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    # False: only the owner can list, read or submit it; True: every user can.
    shared: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


def visible_to(user_id: int) -> ColumnElement[bool]:
    """The registered models this user may list, read and submit: their own and shared ones.

    Every query of registered models on a user's behalf filters with this, so a private
    model answers exactly as a missing one does.
    """
    return or_(RegisteredModel.shared.is_(True), RegisteredModel.owner_id == user_id)


class Dataset(Base):
    """A dataset as evaluations name it: a spec ("synthetic" or a folder), a count and a seed."""

    __tablename__ = "datasets"
    __table_args__ = (
        UniqueConstraint("spec", "count", "seed", name="uq_datasets_spec_count_seed"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    spec: Mapped[str] = mapped_column(String(500))
    # -1 stands for "every sample" so the unique constraint works (NULLs never collide).
    count: Mapped[int] = mapped_column(Integer, default=-1)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str] = mapped_column(String(200), default="")
    sample_count: Mapped[int] = mapped_column(Integer, default=0)
    class_names: Mapped[list[str]] = mapped_column(JSONType, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
