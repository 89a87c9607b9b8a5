"""Idempotent submissions: the client's key for one submission, unique per user.

A client that got no answer to a submission (a hung broker or database, a dropped
connection) cannot know whether it was stored; retrying without a key could run the
evaluation twice. With a key (``clientKey`` in ``submitEvaluation``'s input) the retry
reads back what the first try stored, whatever else it sends, and stores nothing more.
The key is the client's own (the CLI sends a new UUID per submission), so two users may
use the same one: the unique index is on (owner, key) (migration 0019).
"""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.rejections import Rejection
from services.api.submission_request import FanOut
from shared.db.evaluations import Evaluation

MAX_CLIENT_KEY_CHARS = 100
_KEY = re.compile(r"[A-Za-z0-9._:~-]+")
ACCEPTED = f"1 to {MAX_CLIENT_KEY_CHARS} of A-Z a-z 0-9 . _ : ~ - (a UUID, say)"


def client_key_problem(key: str | None) -> Rejection | None:
    """Why ``key`` cannot be a client key, or None (no key is fine)."""
    if key is None:
        return None
    if len(key) > MAX_CLIENT_KEY_CHARS or not _KEY.fullmatch(key):
        shown = key if len(key) <= 40 else key[:40] + "..."
        return Rejection(
            "InvalidInput",
            f"clientKey: {shown!r} is not a key; give {ACCEPTED}",
            field="clientKey",
            accepted=[ACCEPTED],
        )
    return None


def earlier_submission(
    session: Session, *, owner_id: int, key: str | None
) -> Evaluation | FanOut | None:
    """What the owner's earlier submission with ``key`` stored: its evaluation, or the
    whole fan-out or gang its first member leads; None with no key or no such submission."""
    if key is None:
        return None
    first = session.scalars(
        select(Evaluation).where(Evaluation.owner_id == owner_id, Evaluation.client_key == key)
    ).first()
    if first is None or first.group_id is None or first.group_info:
        # A group with group_info is a campaign's, which submitEvaluation never makes.
        return first
    members = session.scalars(
        select(Evaluation)
        .where(Evaluation.owner_id == owner_id, Evaluation.group_id == first.group_id)
        .order_by(Evaluation.created_at, Evaluation.id)
    )
    return FanOut(group_id=first.group_id, evaluations=list(members))
