"""What a client submits to the stack: a run request (services/core/request.py) with
what only a stack submission carries, and how a fan-out is answered."""

from __future__ import annotations

from dataclasses import dataclass

from services.core.request import RunRequest
from shared.db.evaluations import Evaluation


@dataclass(frozen=True)
class Submission(RunRequest):
    """A ``RunRequest`` as the stack takes it: the model may be a registered version or an
    inline manifest, and the request says on which agents it runs and how it is retried.
    The embedded launcher has none of these (a model there is a name or a file)."""

    # The registered model's version; None: its latest (or the catalogue's).
    version: str | None = None
    # An inline manifest (YAML) instead of a registered or catalogue model.
    manifest_yaml: str | None = None
    # One evaluation on every matching agent, grouped for comparison, instead of one.
    fan_out: bool = False
    # A data-parallel gang (services/api/campaigns/training_scaling/group.py): one
    # training evaluation per rank on this many distinct matching agents, each pinned to
    # its agent, with its rank and the ranks sharing its host in its group. None: one
    # evaluation.
    gang_size: int | None = None
    # The largest gang the request's group will submit later (a training scaling's largest
    # world size): refused now, naming worldSizes, when the live agents cannot fill it.
    gang_largest: int | None = None
    # The client's idempotency key for this submission (services/api/client_keys.py): a
    # retry with the same key returns what the first try stored. None: no key.
    client_key: str | None = None


@dataclass(frozen=True)
class FanOut:
    """The evaluations of one fan-out, one per matching agent, sharing ``group_id``."""

    group_id: str
    evaluations: list[Evaluation]
