"""An operation's size and cost, judged right after it is parsed and before any validation
rule walks it; then the (cached) validation; then, before it runs, the caller's budget.

Order matters here: Strawberry's depth and alias rules walk a fragment again at every
spread, so a 1.2 KB document of nested fragments took minutes to validate (issue 53).
``OperationBounds`` is the one validation step of the schema (it replaces Strawberry's
ValidationCache and does its caching): it first finds, in one pass that walks each
fragment once (expansion.py, query_cost.py), the document's expanded size and the
chosen operation's estimated cost, and the pairs graphql-core's overlap rule would
compare (merge_pairs.py: that rule is quadratic in a selection set's width); it refuses
past ``max_expanded_size`` or ``max_merge_pairs`` (QUERY_TOO_LARGE), past ``max_cost``
(QUERY_TOO_COSTLY), or for a fragment cycle or an undefined fragment
(GRAPHQL_VALIDATION_FAILED), without running any rule. Only a document within the limits
is validated, and every rule's walk is then bounded by them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphql import DocumentNode, ExecutionResult, GraphQLError, OperationDefinitionNode
from strawberry.extensions import ValidationCache

from services.api.cost_budget import RATE_LIMITED
from services.api.graphql.expansion import FragmentProblem, expanded_size, fragments_of
from services.api.graphql.merge_pairs import merge_pairs
from services.api.graphql.query_cost import QUERY_TOO_COSTLY, operation_cost
from services.api.repeat_refusals import REFUSED_SCOPE_KEY
from services.api.short_cache import ShortCache

QUERY_TOO_LARGE = "QUERY_TOO_LARGE"
INVALID_FRAGMENTS = "GRAPHQL_VALIDATION_FAILED"


@dataclass(frozen=True)
class Verdict:
    """What the walk found: the chosen operation's cost, or why it is refused."""

    cost: int = 0
    refusal: str | None = None
    code: str = QUERY_TOO_COSTLY

    def error(self) -> GraphQLError | None:
        if self.refusal is None:
            return None
        return GraphQLError(self.refusal, extensions={"code": self.code})


def judge(
    schema: Any,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any],
    *,
    max_expanded_size: int,
    max_merge_pairs: int,
    max_cost: int,
) -> Verdict:
    """The verdict on ``document`` (its size counts every operation, as the rules walk
    them all; its cost is the operation that would run's)."""
    try:
        size = expanded_size(document, max_expanded_size)
        if size > max_expanded_size:
            return Verdict(refusal=_too_large(size, max_expanded_size), code=QUERY_TOO_LARGE)
        pairs = merge_pairs(document)
        if pairs > max_merge_pairs:
            return Verdict(refusal=_too_wide(pairs, max_merge_pairs), code=QUERY_TOO_LARGE)
        fragments = fragments_of(document)
        chosen = next(
            (
                d
                for d in document.definitions
                if isinstance(d, OperationDefinitionNode)
                and (operation_name is None or (d.name and d.name.value == operation_name))
            ),
            None,
        )
        cost = 0 if chosen is None else operation_cost(schema, chosen, fragments, variables)
    except FragmentProblem as problem:
        return Verdict(refusal=f"query: {problem}", code=INVALID_FRAGMENTS)
    except RecursionError:
        # Only where the token limit was raised far above its default (expansion.py).
        return Verdict(refusal="query: nested too deeply to judge", code=QUERY_TOO_LARGE)
    if cost > max_cost:
        return Verdict(cost=cost, refusal=_too_costly(cost, max_cost))
    return Verdict(cost=cost)


def _too_large(size: int, limit: int) -> str:
    return (
        f"query: with its fragments inlined it holds at least {size:,} fields and "
        f"fragment spreads, above the limit of {limit:,} "
        "(BENCHSTACK_MAX_QUERY_EXPANDED_SIZE): a fragment counts at every spread of it; "
        "spread fewer fragments or ask for fewer fields"
    )


def _too_wide(pairs: int, limit: int) -> str:
    return (
        f"query: validating it compares {pairs:,} pairs of fields or fragments spread side "
        f"by side under one name, above the limit of {limit:,} "
        "(BENCHSTACK_MAX_QUERY_MERGE_PAIRS): ask for each field and spread each fragment once"
    )


def _too_costly(cost: int, limit: int) -> str:
    return (
        f"query: its estimated cost {cost:,} is above the limit of {limit:,} "
        "(BENCHSTACK_MAX_QUERY_COST): ask for fewer items (first, limit) or fields, "
        "or split it into several queries"
    )


class OperationBounds(ValidationCache):
    """Refuses an operation too large or too costly before validating it (see the module's
    docstring); charges a valid one's cost to its caller's budget before it runs."""

    def __init__(
        self, *, max_expanded_size: int, max_merge_pairs: int, max_cost: int, cache_size: int
    ) -> None:
        super().__init__(maxsize=cache_size)
        self.max_expanded_size = max_expanded_size
        self.max_merge_pairs = max_merge_pairs
        self.max_cost = max_cost
        self._cost = 0

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is None:
            yield from super().on_validate()
            return
        verdict = self._verdict(context.graphql_document, context)
        self._cost = verdict.cost
        refusal = verdict.error()
        if refusal is None:
            yield from super().on_validate()
            return
        # Set before Strawberry validates: it then validates nothing (schema._run_validation)
        # and answers these errors.
        context.pre_execution_errors = [refusal]
        _remember_refusal(context.context, refusal)
        yield

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        if context.result is None:
            refusal = _over_budget(context.context, self._cost)
            if refusal is not None:
                context.result = ExecutionResult(data=None, errors=[refusal])
        yield

    def _verdict(self, document: DocumentNode, context: Any) -> Verdict:
        variables = dict(context.variables or {})
        limits = (self.max_expanded_size, self.max_merge_pairs, self.max_cost)
        key = _verdict_key(context.query, context.operation_name, variables, limits)

        def walk() -> Verdict:
            return judge(
                context.schema._schema,
                document,
                context.operation_name,
                variables,
                max_expanded_size=self.max_expanded_size,
                max_merge_pairs=self.max_merge_pairs,
                max_cost=self.max_cost,
            )

        return walk() if key is None else _VERDICTS.get(key, walk)


# The same text with the same variables is judged the same: walked once (clients repeat a
# few queries). Only short variables are part of a key; others are walked every time.
# The limits are part of the key too (a process may hold schemas with different ones).
_VERDICTS: ShortCache[Verdict] = ShortCache(math.inf, max_keys=1024)
MAX_KEYED_VARIABLES_CHARS = 2048
# Nor are long texts (a 2,000-token document may hold a 2 MiB string): 1,024 of them kept
# would hold gigabytes. Every text the web UI and the CLI send is under 2,000 characters.
MAX_KEYED_QUERY_CHARS = 16 * 1024


def _verdict_key(
    query: Any, operation: str | None, variables: dict[str, Any], limits: tuple[int, ...]
) -> tuple[str, str | None, str, tuple[int, ...]] | None:
    """A key for ``_VERDICTS``, or None where the verdict is not kept."""
    if not isinstance(query, str) or len(query) > MAX_KEYED_QUERY_CHARS:
        return None
    try:
        written = json.dumps(variables, sort_keys=True)
    except (TypeError, ValueError):
        return None
    if len(written) > MAX_KEYED_VARIABLES_CHARS:
        return None
    return (query, operation, written, limits)


def _remember_refusal(context: Any, refusal: GraphQLError) -> None:
    """Leave the refusal where the HTTP layer sees it (repeat_refusals.py): the same body
    is refused at once next time. A budget refusal is not left: it depends on the moment."""
    request = getattr(context, "request", None)
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        scope[REFUSED_SCOPE_KEY] = refusal.formatted


def _over_budget(context: Any, cost: int) -> GraphQLError | None:
    """RATE_LIMITED when the caller spent its query budget (cost_budget.py); None where
    the context has no budget (a schema executed outside the app)."""
    deps = getattr(context, "deps", None)
    budget = getattr(deps, "query_budget", None)
    if budget is None:
        return None
    wait = budget.take(context.caller, cost)
    if wait <= 0:
        return None
    return GraphQLError(
        f"query: this caller spent its query budget of {budget.rate:,.0f} cost units a "
        f"second (this one costs {cost:,}; BENCHSTACK_QUERY_COST_PER_SECOND): retry in "
        f"{wait:.1f} s, or ask for fewer items",
        extensions={"code": RATE_LIMITED, "retryAfterS": round(wait, 2)},
    )
