"""Rows for tests that need one in the database: the required columns filled with the
smallest valid values, the fields under test given by the caller."""

from __future__ import annotations

import uuid
from typing import Any

from shared.db.evaluations import Evaluation


def evaluation_row(owner_id: int, **fields: Any) -> Evaluation:
    """A null-backend evaluation on cpu of model "m"; ``fields`` override any column."""
    defaults: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "model_name": "m",
        "model_version": "1.0.0",
        "manifest": {},
        "framework": "null",
        "device": "cpu",
        "scenario": {},
        "batch_size": 1,
        "dataset": "synthetic",
    }
    return Evaluation(owner_id=owner_id, **{**defaults, **fields})
