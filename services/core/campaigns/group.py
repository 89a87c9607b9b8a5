"""What every group kind shares: the member record stored in ``group_info`` and in each
run's report, what a member changes of the group's request (``Start``, which each launcher
applies to its own request), the refusal of a bad campaign request, and ``next_step`` for
the kinds whose members all start at once (repeats, sweep, the accuracy + performance pair)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict

from services.core.request import RunRequest


class InvalidCampaign(ValueError):
    """A campaign request refused before anything runs: ``field`` names what the user gave
    (as the launcher calls it), ``accepted`` lists the choices where there are few."""

    def __init__(self, field: str, message: str, accepted: Sequence[str] = ()) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.accepted = list(accepted)


@dataclass(frozen=True)
class Start:
    """One member to run: the group record it stores and what it changes of the request
    the group was made from. Both launchers apply it to their request (``apply``; the
    stack pins it too: services/api/campaigns/groups.apply), so both run the same members."""

    group: dict[str, Any]
    scenario: str | None = None  # replaces the request's scenario; None keeps it
    # Set over the request's scenario settings (snake_case); a None value removes one.
    settings: Mapping[str, Any] = field(default_factory=dict)
    batch_size: int | None = None
    # On the system the group's other members run on (the stack pins it to one agent).
    pinned: bool = False
    # Something to tell the user before it runs (the launcher shows or logs it).
    warning: str | None = None


Q = TypeVar("Q", bound=RunRequest)


def apply(request: Q, start: Start) -> Q:
    """``request`` as the member ``start`` runs it, in either launcher's request type; its
    settings in snake_case, so a camelCase key the client gave is replaced, not doubled."""
    settings = request.named_settings | dict(start.settings)
    return replace(
        request,
        scenario=start.scenario or request.scenario,
        settings={k: v for k, v in settings.items() if v is not None or k not in start.settings},
        batch_size=start.batch_size or request.batch_size,
        group=start.group,
    )


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

    def start(self) -> Start:
        """What this member changes of the request; a kind whose members differ says how."""
        return Start(self.stored())

    @classmethod
    def read(cls, info: Mapping[str, Any], group_id: str | None = None) -> Self:
        """A stored record back; ``group_id``: the stack's column, where the info lacks it."""
        return cls.model_validate({**info, "id": group_id} if group_id else dict(info))


R = TypeVar("R")


@dataclass(frozen=True)
class Done(Generic[R]):
    """A group with nothing left to start: its summary."""

    summary: R


def all_at_once(
    members: Sequence[Member], finished: Sequence[dict[str, Any]], summarise: Callable[..., R]
) -> list[Start] | Done[R]:
    """The next step of a group whose members run together: all of them before any has
    finished, nothing while some run, the summary of their reports once all have."""
    if not finished:
        return [member.start() for member in members]
    if len(finished) < len(members):
        return []
    return Done(summarise(finished))
