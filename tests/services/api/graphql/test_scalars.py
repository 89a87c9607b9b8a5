"""copied: a GraphQL type made from a row or a service's dataclass, field by field."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import strawberry

from services.analysis.advice import Advice, SystemAdvice
from services.api.graphql.advice.queries import AdviceType, SystemAdviceType
from services.api.graphql.agents.types import AgentType
from services.api.graphql.evaluations.types import EvaluationType, RunType
from services.api.graphql.scalars import copied
from services.api.graphql.workload_fields import results
from shared.db.evaluations import Agent, Evaluation
from shared.db.models import Run


@strawberry.type
class Sample:
    name: str
    count: int
    label: str

    @strawberry.field
    def shout(self) -> str:  # a resolver: not copied, nothing to give
        return self.name.upper()


def test_fields_are_taken_by_name_and_given_ones_win() -> None:
    row = SimpleNamespace(name="a", count=3, label="ignored", other=1)
    made = copied(Sample, row, label="given")
    assert (made.name, made.count, made.label) == ("a", 3, "given")


def test_a_field_the_source_lacks_is_named() -> None:
    with pytest.raises(AttributeError, match="count"):
        copied(Sample, SimpleNamespace(name="a"), label="x")


def _copied_names(cls: type, given: set[str]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.init} - given


@pytest.mark.parametrize(
    ("graphql_type", "source", "given"),
    [
        (AgentType, Agent, {"hardware", "software", "settings", "live"}),
        (SystemAdviceType, SystemAdvice, {"settings", "notes"}),
        (AdviceType, Advice, {"systems", "missing"}),
        (
            RunType,
            Run,
            {"stability", "confidence", "logs", "profile", "layers", "roofline"}
            | {"operators", "trace_file", "training", "log_keys", "metrics", "environment"}
            | {"settings", "report", "shown_figures"}
            # Each workload's own result field (Workload.graphql_result), made from the report.
            | {field for field, _ in results()},
        ),
        (EvaluationType, Evaluation, {"samples", "preprocessing", "group_kind", "state"}),
    ],
)
def test_each_copied_type_finds_its_fields_on_its_source(
    graphql_type: type, source: type, given: set[str]
) -> None:
    # copied() is not type-checked field by field: this is what mypy checked before.
    # A dataclass's fields without a default are no class attributes; ORM columns are.
    fields = (
        {f.name for f in dataclasses.fields(source)} if dataclasses.is_dataclass(source) else set()
    )
    names = _copied_names(graphql_type, given)
    lacking = {name for name in names if name not in fields and not hasattr(source, name)}
    assert not lacking, f"{graphql_type.__name__} copies {lacking} that {source.__name__} lacks"
