"""The spans of an evaluation's request as each service saw them (the API's submission,
each Celery task of the scheduler, preprocess, inference and aggregator workers), kept so
the run's stored trace can hold the whole request, not only the inference worker's part
(shared/request_spans.py records them; profiling/stack_trace.py reads them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.base import Base, JSONType


class RequestSpan(Base):
    __tablename__ = "request_spans"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # Gone with its evaluation: the table is as bounded as the evaluations are.
    evaluation_id: Mapped[str] = mapped_column(
        ForeignKey("evaluations.id", ondelete="CASCADE"), index=True
    )
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    parent_id: Mapped[str] = mapped_column(String(16), default="")
    name: Mapped[str] = mapped_column(String(200))
    service: Mapped[str] = mapped_column(String(100))
    start_ns: Mapped[int] = mapped_column(BigInteger)
    end_ns: Mapped[int] = mapped_column(BigInteger)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
