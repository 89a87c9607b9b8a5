"""The cost limit refuses before running what would read and send too much; the web UI's
own queries, at the sizes it sends and at the resolvers' maximum sizes, stay under it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import strawberry
from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse

from benchmarks.api_attacks import COSTLY, fragment_fan_out, fragment_wrapped
from services.api.graphql.query_cost import LIST_GUESS, QUERY_TOO_COSTLY, operation_cost
from services.api.run_charts import MAX_LATENCY_POINTS, MAX_TRACE_SPANS
from services.api.schema import schema
from services.workloads.graphql_fields import COUNTED_BY_PARENT, LIST_SIZE
from services.workloads.training.summary import MAX_LOG_LINES, MAX_STEP_POINTS
from shared.settings_groups.request_limits import RequestLimits
from tests.services.api.conftest import Api

# The deployment default: the most one operation may cost.
MAX_COST = RequestLimits.model_construct().max_query_cost
QUERIES_JS = (
    Path(__file__).resolve().parents[4] / "services/api/web/static/js/queries.js"
).read_text()
# Twenty aliases of the heaviest page: the query that held the API for 15-33 s.
ATTACK = (
    "{"
    + " ".join(
        f"a{i}: evaluations(first: 100) {{ items {{ runs {{ report environment "
        f"latencySample(limit: 20000) {{ latenciesMs }} }} }} }}"
        for i in range(20)
    )
    + "}"
)


def cost(query: str, variables: dict[str, Any] | None = None) -> int:
    document = parse(query)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    return sum(
        operation_cost(schema._schema, d, fragments, variables or {})
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
    )


def ui_queries() -> dict[str, str]:
    """Every operation in the web UI's queries.js, its ${...} fragments left out."""
    found = {}
    for text in re.findall(r"`([^`]*)`", QUERIES_JS):
        cleaned = re.sub(r"\$\{[^}]*\}", "", text)
        name = re.search(r"^\s*(?:query|mutation|subscription)\s+(\w+)", cleaned)
        if name:
            found[name.group(1)] = cleaned
    return found


def test_the_web_ui_s_queries_cost_less_than_the_limit_even_at_the_largest_sizes() -> None:
    largest = {
        "first": 200,
        "points": MAX_LATENCY_POINTS,
        "spans": MAX_TRACE_SPANS,
        "lines": MAX_LOG_LINES,
    }
    queries = ui_queries()
    assert {"Evaluations", "RunCharts", "Compared", "TrainingCharts"} <= set(queries)
    assert MAX_STEP_POINTS <= MAX_LATENCY_POINTS  # "points" stands for both at their largest
    for name, query in queries.items():
        assert cost(query, largest) < MAX_COST, name


def test_the_twenty_alias_query_costs_far_more_than_the_limit() -> None:
    assert cost(ATTACK) > 100 * MAX_COST


def test_a_variable_counts_as_its_value_and_a_missing_size_as_the_default() -> None:
    query = "query($n: Int!) { evaluations(first: $n) { items { id } } }"
    assert cost(query, {"n": 100}) == 10 * cost(query, {"n": 10})
    assert cost("{ evaluations { items { id } } }") == cost(query, {"n": 20})  # default 20


def test_fragments_and_aliases_are_each_counted() -> None:
    one = "{ evaluations(first: 50) { items { id modelName } } }"
    spread = "{ a: evaluations(first: 50) { ...F } b: evaluations(first: 50) { ...F } } "
    spread += "fragment F on EvaluationPage { items { id modelName } }"
    assert cost(spread) == 2 * cost(one)


@pytest.mark.parametrize("levels", [1, 17, 40])
def test_a_query_costs_the_same_however_deeply_fragments_wrap_it(levels: int) -> None:
    # Fragments nested deeper than 16 once counted 0: COSTLY in 17 of them cost nothing.
    assert cost(fragment_wrapped(levels)) == cost(COSTLY) > MAX_COST


def test_a_fragment_spread_twice_costs_twice_at_every_level() -> None:
    # 2^20 spreads of the last fragment, each walked once: counted, not followed.
    leaf = cost("{ evaluations { totalCount } }")
    assert leaf > 0
    assert cost(fragment_fan_out(20)) == 2**20 * leaf


@pytest.mark.parametrize("through_variables", [False, True])
def test_the_api_refuses_a_costly_query_before_running_it(
    api: Api, through_variables: bool
) -> None:
    token = api.token("prober")
    query, variables = ATTACK, None
    if through_variables:
        query = "query($n: Int!) { evaluations(first: $n) { items { runs { "
        query += "latencySample(limit: 20000) { latenciesMs } } } } }"
        variables = {"n": 200}
    started = time.monotonic()
    response = api.gql(token, query, variables)
    took = time.monotonic() - started
    assert response.status_code == 200
    body = response.json()
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == QUERY_TOO_COSTLY
    assert "BENCHSTACK_MAX_QUERY_COST" in error["message"]
    assert took < 2.0


def test_an_ordinary_query_still_runs(api: Api) -> None:
    token = api.token("reader")
    page = api.data(token, "{ evaluations(first: 50) { items { id runs { id } } } }")
    assert page["evaluations"]["items"] == []


def test_one_text_is_judged_by_its_variables_each_time(api: Api) -> None:
    """Costs are kept per text and variables: a cheap call does not let a costly one in."""
    token = api.token("varier")
    query = "query($n: Int!) { evaluations(first: $n) { items { runs { "
    query += "latencySample(limit: 20000) { latenciesMs } } } } }"
    for n, refused in ((1, False), (200, True), (1, False), (200, True)):
        body = api.gql(token, query, {"n": n}).json()
        codes = [e["extensions"]["code"] for e in body.get("errors") or []]
        assert codes == ([QUERY_TOO_COSTLY] if refused else []), (n, body)


# How the workloads' types (in their folders, below the API) size their lists.
@strawberry.type
class DeclaredPage:
    items: list[int] = strawberry.field(metadata={COUNTED_BY_PARENT: True})
    tags: list[str] = strawberry.field(metadata={LIST_SIZE: 7})
    guessed: list[str]


@strawberry.type
class DeclaredQuery:
    @strawberry.field
    def page(self, limit: int = 100) -> DeclaredPage:
        return DeclaredPage(items=[], tags=[], guessed=[])


def test_a_list_field_may_declare_its_size_or_that_its_parent_counts_it() -> None:
    declared = strawberry.Schema(query=DeclaredQuery)._schema

    def cost_in(query: str) -> int:
        (operation,) = parse(query).definitions
        assert isinstance(operation, OperationDefinitionNode)
        return operation_cost(declared, operation, {}, {})

    # The page costs its limit, and each of its items what one selection costs there.
    assert cost_in("{ page(limit: 100) { items } }") == 100 * (1 + 1)
    assert cost_in("{ page(limit: 100) { tags } }") == 100 * (1 + 7)
    assert cost_in("{ page(limit: 100) { guessed } }") == 100 * (1 + LIST_GUESS)
