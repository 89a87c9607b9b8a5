"""Typed errors that mutation results return instead of raising, so clients can branch."""

from __future__ import annotations

import strawberry

from services.api.rejections import Rejection


@strawberry.interface
class UserError:
    message: str
    field: str


@strawberry.type
class UnknownModel(UserError):
    known: list[str]


@strawberry.type
class InvalidScenarioSettings(UserError):
    pass


@strawberry.type
class NoMatchingAgent(UserError):
    """``field`` is the unmet constraint: framework, device, frameworkVersion, hostname,
    arch, gpu, memory, threads, cores or agent; ``message`` quotes the term and what the
    live agents have."""


@strawberry.type
class InvalidManifest(UserError):
    problems: list[str]


@strawberry.type
class InvalidInput(UserError):
    accepted: list[str]


@strawberry.type
class LimitExceeded(UserError):
    """A per-user limit (services/api/user_quota.py): ``field`` names the setting,
    ``message`` the user's figure and the limit, ``accepted`` what fits now."""

    accepted: list[str]


@strawberry.type
class NotFound(UserError):
    pass


@strawberry.type
class AlreadyFinished(UserError):
    state: str


@strawberry.type
class ModelExists(UserError):
    pass


def from_rejection(
    rejection: Rejection,
) -> (
    UnknownModel
    | InvalidScenarioSettings
    | NoMatchingAgent
    | InvalidManifest
    | InvalidInput
    | LimitExceeded
):
    common = {"message": rejection.message, "field": rejection.field}
    if rejection.kind == "LimitExceeded":
        return LimitExceeded(**common, accepted=rejection.accepted)
    if rejection.kind == "UnknownModel":
        return UnknownModel(**common, known=rejection.accepted)
    if rejection.kind == "InvalidScenarioSettings":
        return InvalidScenarioSettings(**common)
    if rejection.kind == "NoMatchingAgent":
        return NoMatchingAgent(**common)
    if rejection.kind == "InvalidManifest":
        return InvalidManifest(**common, problems=rejection.problems)
    return InvalidInput(**common, accepted=rejection.accepted)


def cancel_refusal(rejection: Rejection) -> NotFound | AlreadyFinished:
    common = {"message": rejection.message, "field": rejection.field}
    if rejection.kind == "AlreadyFinished":
        return AlreadyFinished(**common, state=rejection.state)
    return NotFound(**common)


def registration_refusal(rejection: Rejection) -> InvalidManifest | ModelExists:
    common = {"message": rejection.message, "field": rejection.field}
    if rejection.kind == "InvalidManifest":
        return InvalidManifest(**common, problems=rejection.problems)
    return ModelExists(**common)
