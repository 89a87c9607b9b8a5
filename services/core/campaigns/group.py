"""What every group kind shares: the member record stored in ``group_info`` and in each
run's report, the refusal of a bad campaign request, and ``next_step`` for the kinds whose
members all start at once (repeats, sweep, the accuracy + performance pair)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict


class InvalidCampaign(ValueError):
    """A campaign request refused before anything runs: ``field`` names what the user gave
    (as the launcher calls it), ``accepted`` lists the choices where there are few."""

    def __init__(self, field: str, message: str, accepted: Sequence[str] = ()) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.accepted = list(accepted)


class Member(BaseModel):
    """One member's place in its group, as both modes store it: the stack's
    ``Evaluation.group_info`` (its id in ``group_id``) and every run report's ``group``."""

    # Extra keys are ignored: rows stored before this record (the embedded pair kept
    # ``runs``) still read back.
    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: str
    id: str

    def stored(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def read(cls, info: Mapping[str, Any], group_id: str | None = None) -> Self:
        """A stored record back; ``group_id``: the stack's column, where the info lacks it."""
        return cls.model_validate({**info, "id": group_id} if group_id else dict(info))


M = TypeVar("M", bound=Member)
R = TypeVar("R")


@dataclass(frozen=True)
class Done(Generic[R]):
    """A group with nothing left to start: its summary."""

    summary: R


def all_at_once(
    members: Sequence[M], finished: Sequence[dict[str, Any]], summarise: Callable[..., R]
) -> list[M] | Done[R]:
    """The next step of a group whose members run together: all of them before any has
    finished, nothing while some run, the summary of their reports once all have."""
    if not finished:
        return list(members)
    if len(finished) < len(members):
        return []
    return Done(summarise(finished))
