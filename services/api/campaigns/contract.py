"""What a group kind the API submits declares, once, in its folder's ``__init__.py``:
``CAMPAIGN = Campaign(...)``. The schema merges every campaign's queries and mutations
(services/api/schema.py) and the aggregator is handed every ``next_step``
(services/api/group_steps.py), so adding a kind is adding its folder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.settings import Settings

# After a member's run is stored: submit the group's next member(s) and return them, a
# Rejection when the API refuses them now (the group stops), or None when there is none.
NextStep = Callable[[Session, Settings, Publisher, Evaluation], object]


@dataclass(frozen=True)
class Campaign:
    # The group kind its members store in Evaluation.group_info["kind"].
    kind: str
    # Strawberry types whose fields are merged into the root Query and Mutation.
    queries: type
    mutations: type
    # For a group that submits its members one after another; None when all are
    # submitted at once.
    next_step: NextStep | None = None

    def __post_init__(self) -> None:
        if not self.kind:
            raise ValueError("Campaign.kind: empty; give the group kind its members store")
        for role in ("queries", "mutations"):
            found = getattr(self, role)
            if not hasattr(found, "__strawberry_definition__"):
                raise TypeError(
                    f"Campaign {self.kind!r}: {role} must be a @strawberry.type class, "
                    f"not {found!r}"
                )
