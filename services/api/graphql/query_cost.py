"""What an operation may cost, estimated before it runs: a query that would read and send
too much is refused with QUERY_TOO_COSTLY instead of holding a worker thread and the
database for seconds while others wait.

The estimate walks the operation's fields (fragments inlined, aliases each counted): a
field costs its weight times the sizes of the lists it sits in. A list's size is its size
argument (``first``, ``limit``: the value given, a variable's value, or the schema's
default) or, for a list with no argument, a guess (``LIST_SIZES``, else ``LIST_GUESS``;
a page's ``items`` are already counted by its ``first``). Fields that
return whole documents (a run's report, an environment) weigh more. Twenty aliases of
``evaluations(first: 100) { items { runs { latencySample(limit: 20000) { latenciesMs }}}}``
cost about 8 x 10^7; the web UI's heaviest view (a run's charts: 2,000 latencies, 400
spans) about 3 x 10^4, and at the resolvers' own maximum sizes about 10^5.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from graphql import (
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    value_from_ast,
)
from strawberry.extensions import SchemaExtension

from services.api.graphql.cost_budget import RATE_LIMITED
from services.api.repeat_refusals import REFUSED_SCOPE_KEY
from services.api.short_cache import ShortCache

QUERY_TOO_COSTLY = "QUERY_TOO_COSTLY"
# Arguments that say how many items a field returns.
SIZE_ARGUMENTS = ("first", "limit")
# The length assumed for a list field without a size argument, and for some that are
# known to run shorter or longer (an evaluation has one run, or a few when repeated).
LIST_GUESS = 10
LIST_SIZES = {
    ("Evaluation", "runs"): 2,
    ("Run", "metrics"): 30,
    ("Run", "layers"): 50,
    ("Training", "settings"): 12,
    # profiling/analysis.library_ops: 20 of each kind; layer_ops: 10 layers of 5 ops.
    ("Operators", "operators"): 40,
    ("Operators", "perLayer"): 10,
    ("LayerOperators", "ops"): 5,
}
# Lists whose length their parent's size argument already counts.
COUNTED_BY_PARENT = {
    ("EvaluationPage", "items"),
    ("LatencySample", "latenciesMs"),
    ("LatencySample", "cumulativeFractions"),
    ("TraceTimeline", "spans"),
    ("FlameGraph", "nodes"),
    ("TrainingStepTimes", "steps"),
    ("TrainingStepTimes", "seconds"),
}
# Fields returning whole documents: about this many scalar fields' worth each.
HEAVY = {("Run", "report"): 200, ("Run", "environment"): 50, ("Evaluation", "manifest"): 20}
# Nested fragments deeper than this are not followed (the depth limit refuses them anyway).
MAX_FRAGMENT_NESTING = 16


def operation_cost(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
) -> int:
    """The estimated cost of ``operation`` (see the module's docstring)."""
    root = schema.get_root_type(operation.operation)
    if root is None:
        return 0
    return _selection_cost(root, operation.selection_set, 1, fragments, variables, 0)


def _fields(
    selection_set: SelectionSetNode,
    fragments: dict[str, FragmentDefinitionNode],
    nesting: int,
) -> Iterator[FieldNode]:
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            yield selection
        elif nesting < MAX_FRAGMENT_NESTING:
            if isinstance(selection, InlineFragmentNode):
                yield from _fields(selection.selection_set, fragments, nesting + 1)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments.get(selection.name.value)
                if fragment is not None:
                    yield from _fields(fragment.selection_set, fragments, nesting + 1)


def _selection_cost(
    parent: GraphQLObjectType,
    selection_set: SelectionSetNode,
    multiplier: int,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    nesting: int,
) -> int:
    total = 0
    for node in _fields(selection_set, fragments, nesting):
        field = parent.fields.get(node.name.value)
        if field is None:
            continue  # __typename, or a field validation already refused
        key = (parent.name, node.name.value)
        size = _size(field, node, variables)
        if size is None:
            size = (
                1
                if key in COUNTED_BY_PARENT or not _is_list(field)
                else LIST_SIZES.get(key, LIST_GUESS)
            )
        inside = multiplier * size
        total += inside * HEAVY.get(key, 1)
        child = get_named_type(field.type)
        if node.selection_set is not None and isinstance(child, GraphQLObjectType):
            total += _selection_cost(
                child, node.selection_set, inside, fragments, variables, nesting + 1
            )
        # A union or interface (a result with typed errors): its members are read as one.
        elif node.selection_set is not None:
            for member in _members(child):
                total += _selection_cost(
                    member, node.selection_set, inside, fragments, variables, nesting + 1
                )
    return total


def _members(named: Any) -> list[GraphQLObjectType]:
    types = getattr(named, "types", None)
    return [t for t in types or [] if isinstance(t, GraphQLObjectType)]


def _is_list(field: GraphQLField) -> bool:
    kind = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    return isinstance(kind, GraphQLList)


def _size(field: GraphQLField, node: FieldNode, variables: dict[str, Any]) -> int | None:
    """The field's size argument as given, as its variable holds, or its default."""
    for name in SIZE_ARGUMENTS:
        argument = field.args.get(name)
        if argument is None:
            continue
        given = next((a for a in node.arguments or () if a.name.value == name), None)
        value = (
            value_from_ast(given.value, argument.type, variables)
            if given is not None
            else argument.default_value
        )
        if isinstance(value, int) and value > 0:
            return value
        return 1
    return None


class QueryCostLimit(SchemaExtension):
    """Refuses an operation whose estimated cost is above ``max_cost`` before it runs."""

    def __init__(self, *, max_cost: int) -> None:
        self.max_cost = max_cost

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is not None and context.result is None:
            refusal = self._refusal(context.schema._schema, document, context)
            if refusal is not None:
                context.result = ExecutionResult(data=None, errors=[refusal])
                if (refusal.extensions or {}).get("code") == QUERY_TOO_COSTLY:
                    _remember_refusal(context.context, refusal)
        yield

    def _refusal(self, schema: GraphQLSchema, document: Any, context: Any) -> GraphQLError | None:
        fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        wanted = context.operation_name
        chosen = [o for o in operations if wanted is None or (o.name and o.name.value == wanted)]
        variables = dict(context.variables or {})
        key = _cost_key(context.query, wanted, variables)

        def walk() -> int:
            return sum(operation_cost(schema, o, fragments, variables) for o in chosen[:1])

        cost = walk() if key is None else _COSTS.get(key, walk)
        if cost <= self.max_cost:
            return _over_budget(context.context, cost)
        return GraphQLError(
            f"query: its estimated cost {cost:,} is above the limit of {self.max_cost:,} "
            "(BENCHSTACK_MAX_QUERY_COST): ask for fewer items (first, limit) or fields, "
            "or split it into several queries",
            extensions={"code": QUERY_TOO_COSTLY},
        )


# The same text with the same variables costs the same: walked once (clients repeat a few
# queries). Only short variables are part of a key; others are walked every time.
_COSTS: ShortCache[int] = ShortCache(math.inf, max_keys=1024)
MAX_KEYED_VARIABLES_CHARS = 2048


def _cost_key(
    query: Any, operation: str | None, variables: dict[str, Any]
) -> tuple[str, str | None, str] | None:
    """A key for ``_COSTS``, or None where the cost is not kept."""
    if not isinstance(query, str):
        return None
    try:
        written = json.dumps(variables, sort_keys=True)
    except (TypeError, ValueError):
        return None
    if len(written) > MAX_KEYED_VARIABLES_CHARS:
        return None
    return (query, operation, written)


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
