"""The one GraphQL pattern of every group kind: ``submit<Kind>(input)`` and
``<kind>(groupId)``. A campaign gives its input, its view type and two plain functions
(submit, read back); this module makes the resolvers around them: run off the event loop
as the caller, count the submission, turn a refusal into the typed error, and read the
group just committed back (the owner's only). ``group_campaign`` declares a kind whose
names follow from it and whose view is made from its members."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import make_dataclass
from types import ModuleType
from typing import Annotated, Any, Generic, Protocol, TypeVar, get_type_hints

import strawberry
from sqlalchemy.orm import Session

from services.api.campaigns.contract import Campaign, NextStep
from services.api.campaigns.groups import group_members, submit_planned
from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import (
    InvalidInput,
    InvalidManifest,
    InvalidScenarioSettings,
    LimitExceeded,
    NoMatchingAgent,
    UnknownModel,
    from_rejection,
)
from services.api.graphql.evaluations.mutations import SubmitEvaluationInput, to_request
from services.api.observability import REJECTIONS, SUBMISSIONS
from services.api.rejections import Rejection
from services.api.submission_request import Submission
from shared.celery_app import Publisher
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings

Shown = TypeVar("Shown")
Input = TypeVar("Input")

# What a group submission may be refused with, besides its view: submitEvaluation's errors.
SUBMIT_ERRORS = (
    UnknownModel,
    InvalidScenarioSettings,
    NoMatchingAgent,
    InvalidManifest,
    InvalidInput,
    LimitExceeded,
)

# (session, settings, publish, owner id, input) -> (group id, what was stored) or a refusal.
Submit = Callable[[Session, Settings, Publisher, int, Input], tuple[str, object] | Rejection]
# (session, owner id, group id) -> the owner's group as shown, None when there is none.
Read = Callable[[Session, int, str], Shown | None]
# (session, settings, publish, owner id, the input's evaluation as a request, the input).
SubmitBase = Callable[
    [Session, Settings, Publisher, int, Submission, Input], tuple[str, object] | Rejection
]


class FromMembers(Protocol):
    """A kind's GraphQL view, made from its group's members in the order submitted."""

    @classmethod
    def from_members(cls, group_id: str, members: list[tuple[Evaluation, Run | None]]) -> Any: ...


def group_campaign(
    kind: str,
    *,
    shown: type[FromMembers],
    submit: SubmitBase[Input],
    input: type[Input],
    descriptions: tuple[str, str],
    next_step: NextStep | None = None,
) -> Campaign:
    """The campaign of ``kind``: ``submit<Kind>(input)`` and ``<kind>(groupId)``, its
    result union ``Submit<Kind>Result``; ``descriptions``: the query's and the mutation's.
    The input's ``evaluation`` (or the input itself, where it is the evaluation) is the
    request ``submit`` gets."""
    name, camel = kind.replace("-", "_"), "".join(word.capitalize() for word in kind.split("-"))

    def read(session: Session, owner_id: int, group_id: str) -> Any:
        members = group_members(session, group_id, kind, owner_id=owner_id)
        return shown.from_members(group_id, members) if members else None

    def submitted(
        session: Session, settings: Settings, publish: Publisher, owner_id: int, data: Input
    ) -> tuple[str, object] | Rejection:
        given: Any = data
        base = to_request(getattr(given, "evaluation", given))
        return submit(session, settings, publish, owner_id, base, data)

    schema: GroupSchema[Input, Any] = GroupSchema(
        shown=shown,
        read=read,
        query=name,
        query_description=descriptions[0],
        submit=submitted,
        input=input,
        mutation=f"submit_{name}",
        result=f"Submit{camel}Result",
        mutation_description=descriptions[1],
    )
    return Campaign(kind, schema.queries, schema.mutations, next_step)


class GroupSchema(Generic[Input, Shown]):
    """The query and mutation of one group kind, as strawberry types for Campaign."""

    def __init__(
        self,
        *,
        shown: type[Shown],
        read: Read[Shown],
        query: str,
        query_description: str,
        submit: Submit[Input],
        input: type[Input],
        mutation: str,
        result: str,
        mutation_description: str,
    ) -> None:
        """``query`` and ``mutation``: the fields' Python names (GraphQL's are camelCase);
        ``result``: the GraphQL name of the mutation's union of ``shown`` and the errors."""
        self._shown, self._read, self._submit, self._what = shown, read, submit, query
        self.queries = self._root_type(
            f"{shown.__name__}Queries", query, self._query_field(query_description)
        )
        self.mutations = self._root_type(
            f"{shown.__name__}Mutations",
            mutation,
            self._mutation_field(input, result, mutation_description),
        )

    def read_group(self, deps: ApiDeps, owner_id: int, group_id: str) -> Shown | None:
        with deps.read_db() as session:
            return self._read(session, owner_id, group_id)

    def submit_group(self, deps: ApiDeps, owner_id: int, data: Input) -> Shown | Rejection:
        with deps.db() as session:
            result = self._submit(session, deps.settings, deps.publish, owner_id, data)
            if isinstance(result, Rejection):
                return result
        group_id = result[0]
        found = self.read_group(deps, owner_id, group_id)
        if found is None:  # it was just committed: a bug, not the user's error
            raise RuntimeError(f"{self._what} {group_id} vanished after its commit")
        return found

    def _query_field(self, description: str) -> Any:
        async def resolve(info: Any, group_id: str) -> Any:
            owner = info.context.require_user()
            return await in_thread(self.read_group, info.context.deps, owner, group_id)

        # Strawberry reads a resolver's types from its annotations: made here, per kind.
        resolve.__annotations__ = {
            "info": strawberry.Info,
            "group_id": str,
            "return": self._shown | None,
        }
        return strawberry.field(resolver=resolve, description=description)

    def _mutation_field(self, input: type[Input], result: str, description: str) -> Any:
        async def resolve(info: Any, input: Any) -> Any:
            owner = info.context.require_user()
            done = await in_thread(self.submit_group, info.context.deps, owner, input)
            if isinstance(done, Rejection):
                REJECTIONS.labels(done.kind).inc()
                return from_rejection(done)
            SUBMISSIONS.inc()
            return done

        union = functools.reduce(operator.or_, (self._shown, *SUBMIT_ERRORS))
        resolve.__annotations__ = {
            "info": strawberry.Info,
            "input": input,
            "return": Annotated[union, strawberry.union(result)],
        }
        return strawberry.mutation(resolver=resolve, description=description)

    @staticmethod
    def _root_type(name: str, field_name: str, field: Any) -> type:
        # Merged into the root Query or Mutation (api/schema.py): its name is not shown.
        return strawberry.type(type(name, (), {field_name: field}))


def planned_campaign(
    kind: ModuleType, *, shown: type[FromMembers], what: str, descriptions: tuple[str, str]
) -> Campaign:
    """The campaign of a kind in services/core/campaigns whose members all start at once,
    from its declarations: ``KIND``, ``Asked`` (the input's fields beside its
    ``evaluation``; with none, the input is the evaluation itself) and ``next_step``.
    ``what``: how it runs its one model, for the refusal of a fan-out or another workload."""
    asked = get_type_hints(kind.Asked)
    input: type = SubmitEvaluationInput
    if asked:
        camel = "".join(word.capitalize() for word in kind.KIND.split("-"))
        fields = [("evaluation", SubmitEvaluationInput), *asked.items()]
        input = strawberry.input(make_dataclass(f"Submit{camel}Input", fields))

    def submit(
        session: Session,
        settings: Settings,
        publish: Publisher,
        owner_id: int,
        base: Submission,
        data: Any,
    ) -> tuple[str, object] | Rejection:
        given = kind.Asked(**{name: getattr(data, name) for name in asked})
        return submit_planned(kind, session, settings, publish, owner_id, base, given, what)

    return group_campaign(
        kind.KIND, shown=shown, submit=submit, input=input, descriptions=descriptions
    )
