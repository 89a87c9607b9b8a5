"""The typed refusal every API service function returns instead of raising.

A service function (submit, cancel, register a model) answers bad input or a refused
action with a ``Rejection`` naming the field at fault and what it accepts; the GraphQL
layer (``graphql/errors.py``) turns it into an error type of the mutation's result union.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Literal

RejectionKind = Literal[
    # submitEvaluation
    "UnknownModel",
    "InvalidScenarioSettings",
    "NoMatchingAgent",
    "InvalidManifest",
    "InvalidInput",
    # a per-user limit (services/api/user_quota.py): ``field`` names it
    "LimitExceeded",
    # cancelEvaluation
    "NotFound",
    "AlreadyFinished",
    # registerModel (and InvalidManifest)
    "ModelExists",
]


@dataclass(frozen=True)
class Rejection:
    kind: RejectionKind
    message: str
    field: str = ""
    problems: list[str] = dc_field(default_factory=list)
    accepted: list[str] = dc_field(default_factory=list)
    # AlreadyFinished: the final state the evaluation is in.
    state: str = ""
