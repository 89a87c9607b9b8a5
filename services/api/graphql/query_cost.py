"""What an operation may cost, estimated before it is validated or run: a query that
would read and send too much is refused with QUERY_TOO_COSTLY (operation_bounds.py)
instead of holding a worker thread and the database for seconds while others wait.

The estimate walks the operation's fields (fragments inlined, aliases each counted): a
field costs its weight times the sizes of the lists it sits in. A list's size is its size
argument (``first``, ``limit``: the value given, a variable's value, or the schema's
default) or, for a list with no argument, a guess (``LIST_SIZES``, else ``LIST_GUESS``;
a page's ``items`` are already counted by its ``first``). Fields that
return whole documents (a run's report, an environment) weigh more. Twenty aliases of
``evaluations(first: 100) { items { runs { latencySample(limit: 20000) { latenciesMs }}}}``
cost about 8 x 10^7; the web UI's heaviest view (a run's charts: 2,000 latencies, 400
spans) about 3 x 10^4, and at the resolvers' own maximum sizes about 10^5.

A selection set's cost is linear in the sizes of the lists around it, so each one is
costed once per type it is read as, for one item, and multiplied where it is used: a
fragment spread at a thousand places is walked once, and nothing is left uncounted
however deeply fragments nest (issue 53: a depth past which fragments counted 0 let
the query above through, wrapped in 17 of them).
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
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

from services.api.graphql.expansion import FragmentProblem
from services.workloads.graphql_fields import COUNTED_BY_PARENT as COUNTED_BY_PARENT_KEY
from services.workloads.graphql_fields import LIST_SIZE as LIST_SIZE_KEY

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
    # profiling/analysis.library_ops: 20 of each kind; layer_ops: 10 layers of 5 ops.
    ("Operators", "operators"): 40,
    ("Operators", "perLayer"): 10,
    ("LayerOperators", "ops"): 5,
}
# Lists whose length their parent's size argument already counts. A field may say either
# itself, in its metadata (what the workloads' types do: workloads/graphql_fields.py).
COUNTED_BY_PARENT = {
    ("EvaluationPage", "items"),
    ("LatencySample", "latenciesMs"),
    ("LatencySample", "cumulativeFractions"),
    ("TraceTimeline", "spans"),
    ("FlameGraph", "nodes"),
}
# Fields returning whole documents: about this many scalar fields' worth each.
HEAVY = {("Run", "report"): 200, ("Run", "environment"): 50, ("Evaluation", "manifest"): 20}


def operation_cost(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
) -> int:
    """The estimated cost of ``operation`` (see the module's docstring). Raises
    FragmentProblem for a fragment cycle (expansion.expanded_size refuses those first)."""
    root = schema.get_root_type(operation.operation)
    if root is None:
        return 0
    return _CostWalk(fragments, variables).selection_set(root, operation.selection_set)


class _CostWalk:
    """One operation's costs: each (selection set, type) pair's cost for one item, kept."""

    def __init__(
        self, fragments: dict[str, FragmentDefinitionNode], variables: dict[str, Any]
    ) -> None:
        self.fragments = fragments
        self.variables = variables
        # Keyed by the node's id: the nodes live as long as the walk (the document holds
        # them). None while a set is being costed, so a cycle is seen, not followed.
        self.costs: dict[tuple[int, str], int | None] = {}

    def selection_set(self, parent: GraphQLObjectType, selection_set: SelectionSetNode) -> int:
        key = (id(selection_set), parent.name)
        if key in self.costs:
            known = self.costs[key]
            if known is None:
                raise FragmentProblem("fragments spread each other in a cycle")
            return known
        self.costs[key] = None
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self.field(parent, selection)
            elif isinstance(selection, InlineFragmentNode):
                total += self.selection_set(parent, selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = self.fragments.get(selection.name.value)
                if fragment is not None:
                    total += self.selection_set(parent, fragment.selection_set)
        self.costs[key] = total
        return total

    def field(self, parent: GraphQLObjectType, node: FieldNode) -> int:
        """One use of ``node`` in one item of ``parent``: its weight times its list's size,
        and what it selects, once per item of that list."""
        field = parent.fields.get(node.name.value)
        if field is None:
            return 0  # __typename, or a field validation refuses
        key = (parent.name, node.name.value)
        size = _size(field, node, self.variables)
        if size is None:
            declared = _metadata(field)
            counted = key in COUNTED_BY_PARENT or declared.get(COUNTED_BY_PARENT_KEY, False)
            size = (
                1
                if counted or not _is_list(field)
                else declared.get(LIST_SIZE_KEY, LIST_SIZES.get(key, LIST_GUESS))
            )
        total = size * HEAVY.get(key, 1)
        if node.selection_set is None:
            return total
        child = get_named_type(field.type)
        # A union or interface (a result with typed errors): its members are read as one.
        members = [child] if isinstance(child, GraphQLObjectType) else _members(child)
        for member in members:
            total += size * self.selection_set(member, node.selection_set)
        return total


def _members(named: Any) -> list[GraphQLObjectType]:
    types = getattr(named, "types", None)
    return [t for t in types or [] if isinstance(t, GraphQLObjectType)]


def _metadata(field: GraphQLField) -> dict[str, Any]:
    """The metadata strawberry keeps for the field (``strawberry.field(metadata=...)``)."""
    definition = (field.extensions or {}).get("strawberry-definition")
    return dict(getattr(definition, "metadata", None) or {})


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
