"""An operation too large once its fragments are inlined, too costly however deeply
fragments wrap it, or with a fragment cycle is refused before any validation rule walks
it; what the web UI, GraphiQL and the CLI send is still validated and runs."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import strawberry.schema.schema as strawberry_schema
from graphql import GraphQLSyntaxError, get_introspection_query, parse

from benchmarks.api_attacks import (
    COSTLY,
    fragment_fan_out,
    fragment_wrapped,
    fragments_side_by_side,
)
from services.api.graphql.expansion import expanded_size
from services.api.graphql.merge_pairs import merge_pairs
from services.api.graphql.operation_bounds import (
    INVALID_FRAGMENTS,
    MAX_KEYED_QUERY_CHARS,
    QUERY_TOO_LARGE,
    _verdict_key,
)
from services.api.graphql.query_cost import QUERY_TOO_COSTLY
from services.api.schema import make_schema
from services.cli import remote, remote_find_peak, remote_reports
from shared.settings_groups.request_limits import RequestLimits
from tests.services.api.conftest import Api, api_with
from tests.services.api.graphql.test_query_cost import cost

LIMITS = RequestLimits.model_construct()
STATIC_JS = Path(__file__).resolve().parents[4] / "services/api/web/static/js"
QUERIES_JS = (STATIC_JS / "queries.js").read_text()
# The selections queries.js imports from the modules that own them (figures.js: the one
# rule's fields), written into its operations as the browser does.
IMPORTED_JS = (STATIC_JS / "figures.js").read_text()


@pytest.fixture
def validated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The operation texts graphql-core validates (the depth and alias rules among its
    rules), recorded by wrapping the ``validate`` Strawberry calls."""
    seen: list[str] = []
    real = strawberry_schema.validate

    def recording(schema: Any, document: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(document.loc.source.body)
        return real(schema, document, *args, **kwargs)

    monkeypatch.setattr(strawberry_schema, "validate", recording)
    return seen


def only_error(query: str, limits: RequestLimits = LIMITS) -> dict[str, Any]:
    result = make_schema(limits).execute_sync(query)
    assert result.data is None
    assert result.errors is not None and len(result.errors) == 1, result.errors
    formatted: dict[str, Any] = result.errors[0].formatted
    return formatted


@pytest.mark.parametrize("levels", [30, 150])
def test_the_fragment_fan_out_is_refused_for_its_size_unvalidated(
    validated: list[str], levels: int
) -> None:
    query = fragment_fan_out(levels)
    # 1.2 KB at 30 levels, 1,500 tokens at 150: within every other limit.
    error = only_error(query)
    assert error["extensions"]["code"] == QUERY_TOO_LARGE
    assert "BENCHSTACK_MAX_QUERY_EXPANDED_SIZE" in error["message"]
    assert f"above the limit of {LIMITS.max_query_expanded_size:,}" in error["message"]
    assert validated == []


@pytest.mark.parametrize("levels", [17, 30])
def test_a_costly_query_inside_nested_fragments_is_refused_for_its_full_cost(
    validated: list[str], levels: int
) -> None:
    error = only_error(fragment_wrapped(levels))
    assert error["extensions"]["code"] == QUERY_TOO_COSTLY
    assert (
        f"estimated cost {cost(COSTLY):,} is above the limit of {LIMITS.max_query_cost:,}"
        in (error["message"])
    )
    assert validated == []


def test_a_subscription_s_fragment_fan_out_is_refused_unvalidated(validated: list[str]) -> None:
    # Subscriptions (websockets) are prepared by another path of Strawberry's. 14 levels:
    # 2^15 selections inlined, which the old code validated (in 70 ms) rather than hang.
    query = (
        fragment_fan_out(14)
        .replace("query{", "subscription{")
        .replace(" on Query", " on Subscription")
    )
    query = query.replace("evaluations{totalCount}", 'evaluationUpdates(id: "x"){id}')

    async def first_answer() -> Any:
        answers = await make_schema(LIMITS).subscribe(query)
        return await answers.__anext__()

    (error,) = asyncio.run(first_answer()).errors
    assert error.extensions["code"] == QUERY_TOO_LARGE
    assert validated == []


WIDE = "{" + " evaluations { totalCount }" * 300 + " }"
SIDE_BY_SIDE = fragments_side_by_side(150)


@pytest.mark.parametrize("query", [WIDE, SIDE_BY_SIDE])
def test_one_field_or_fragments_side_by_side_many_times_are_refused_unvalidated(
    validated: list[str], query: str
) -> None:
    # Within the token and size limits, costing next to nothing, and 0.2-0.5 s to validate.
    error = only_error(query)
    assert error["extensions"]["code"] == QUERY_TOO_LARGE
    assert f"{merge_pairs(parse(query)):,} pairs" in error["message"]
    assert (
        f"above the limit of {LIMITS.max_query_merge_pairs:,} (BENCHSTACK_MAX_QUERY_MERGE_PAIRS)"
        in (error["message"])
    )
    assert validated == []


@pytest.mark.parametrize(
    ("query", "named"),
    [
        (
            "{ ...A } fragment A on Query { x: __typename ...B } fragment B on Query { ...A }",
            "query: fragments spread each other in a cycle: A -> B -> A",
        ),
        ("{ ...Nope }", "query: fragment Nope is spread but not defined"),
    ],
)
def test_a_fragment_cycle_or_an_undefined_fragment_is_named(
    validated: list[str], query: str, named: str
) -> None:
    # The depth rule met the undefined one with a bare KeyError, answered as "'Nope'".
    error = only_error(query)
    assert error["extensions"]["code"] == INVALID_FRAGMENTS
    assert error["message"] == named
    assert validated == []


def test_the_expanded_size_limit_is_the_one_given(validated: list[str]) -> None:
    query = "{ evaluations { totalCount nextCursor } }"  # 3 selections
    error = only_error(query, RequestLimits.model_construct(max_query_expanded_size=2))
    assert "at least 3 fields and fragment spreads, above the limit of 2" in error["message"]
    assert validated == []
    # Within it, validation runs and its rules still refuse what they refuse.
    error = only_error(query + " fragment Unused on Query { __typename }")
    assert validated and "Fragment 'Unused' is never used." in error["message"]


def ui_operations() -> dict[str, str]:
    """Every operation in queries.js with its ${NAME} constants written in, as sent."""
    constants = dict(re.findall(r"const (\w+) = [`\"]([^`\"]*)[`\"];", IMPORTED_JS + QUERIES_JS))

    def written(text: str) -> str:
        while "${" in text:
            text = re.sub(r"\$\{(\w+)\}", lambda m: constants[m.group(1)], text)
        return text

    found = {}
    for text in re.findall(r"export const \w+ = `([^`]*)`", QUERIES_JS):
        name = re.search(r"^\s*(?:query|mutation|subscription)\s+(\w+)", text)
        if name:
            found[name.group(1)] = written(text)
    return found


def cli_operations() -> list[str]:
    """The GraphQL documents the CLI's remote modules hold as constants."""
    found = []
    for module in (remote, remote_find_peak, remote_reports):
        for value in vars(module).values():
            if isinstance(value, str) and re.match(r"\s*(query|mutation)\b", value):
                try:
                    parse(value)
                except GraphQLSyntaxError:
                    continue
                found.append(value)
    return found


def test_the_web_ui_s_the_cli_s_and_graphiql_s_documents_are_far_within_the_limits() -> None:
    operations = ui_operations()
    assert {"Evaluations", "Evaluation", "RunCharts", "Compared"} <= set(operations)
    cli = cli_operations()
    assert len(cli) >= 8
    documents = [*operations.values(), *cli, get_introspection_query(descriptions=True)]
    for document in documents:
        assert expanded_size(parse(document), 10**6) * 10 < LIMITS.max_query_expanded_size
        assert merge_pairs(parse(document)) * 100 < LIMITS.max_query_merge_pairs


def test_graphiql_s_introspection_still_runs() -> None:
    result = make_schema(LIMITS).execute_sync(get_introspection_query(descriptions=True))
    assert result.errors is None and result.data is not None


@pytest.mark.parametrize(
    ("attack", "code"),
    [
        (fragment_fan_out(30), QUERY_TOO_LARGE),
        (fragment_wrapped(17), QUERY_TOO_COSTLY),
        (fragments_side_by_side(150), QUERY_TOO_LARGE),
    ],
)
def test_the_api_refuses_each_fragment_attack_and_serves_the_next_query(
    api: Api, attack: str, code: str
) -> None:
    token = api.token("attacker")
    response = api.gql(token, attack)
    assert response.status_code == 200
    body = response.json()
    assert body["data"] is None
    assert [e["extensions"]["code"] for e in body["errors"]] == [code]
    assert api.data(token, "{ evaluations(first: 5) { totalCount } }") == {
        "evaluations": {"totalCount": 0}
    }


def test_the_api_takes_its_expanded_size_limit_from_settings(tmp_path: Path) -> None:
    with api_with(tmp_path, max_query_expanded_size=3) as api:
        token = api.token("reader")
        assert api.data(token, "{ evaluations { totalCount nextCursor } }")
        body = api.gql(token, "{ evaluations { totalCount nextCursor } agents { id } }").json()
        (error,) = body["errors"]
        assert error["extensions"]["code"] == QUERY_TOO_LARGE
        assert "above the limit of 3 (BENCHSTACK_MAX_QUERY_EXPANDED_SIZE)" in error["message"]


def test_verdicts_are_kept_for_short_texts_only() -> None:
    # Kept by text: 1,024 texts of 2 MiB (one string literal is one token) would be 2 GiB.
    short = "{ evaluations { totalCount } }"
    long = '{ evaluation(id: "' + "x" * MAX_KEYED_QUERY_CHARS + '") { id } }'
    assert _verdict_key(short, None, {}, (1, 2, 3)) is not None
    assert _verdict_key(long, None, {}, (1, 2, 3)) is None
