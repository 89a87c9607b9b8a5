"""How many pairs graphql-core's OverlappingFieldsCanBeMerged rule will compare, bounded
from above before it runs.

The rule checks, in every selection set, that fields answering under one name can merge:
it compares every two fields sharing a response name (fields of inline fragments join
their parent's), every two fragments spread there, and those fields with each fragment.
That is quadratic in a selection set's width: 300 copies of ``evaluations{totalCount}``
(2,000 tokens) took 0.3-0.5 s to validate, 150 fragments spread side by side 0.2-0.3 s,
and a query costing next to nothing can be sent in a loop (issue 53's "variants").
Counted here in one pass over the document as written (each selection set once, as the
rule visits them), the same way for every set; a document the web UI or the CLI sends has
almost none (no name repeats), GraphiQL's introspection about 50.
"""

from __future__ import annotations

from collections import Counter

from graphql import (
    DocumentNode,
    ExecutableDefinitionNode,
    FieldNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionSetNode,
)


def merge_pairs(document: DocumentNode) -> int:
    """The pairs the overlap rule compares across ``document``, counted from above."""
    total = 0
    stack: list[SelectionSetNode] = [
        d.selection_set for d in document.definitions if isinstance(d, ExecutableDefinitionNode)
    ]
    while stack:
        selection_set = stack.pop()
        names: Counter[str] = Counter()
        spreads: set[str] = set()
        _collect(selection_set, names, spreads, stack)
        fields = sum(names.values())
        total += sum(k * (k - 1) // 2 for k in names.values())
        total += len(spreads) * (len(spreads) - 1) // 2 + fields * len(spreads)
    return total


def _collect(
    selection_set: SelectionSetNode,
    names: Counter[str],
    spreads: set[str],
    stack: list[SelectionSetNode],
) -> None:
    """The response names and fragment names of ``selection_set``, its inline fragments'
    joined in; every selection set inside it is pushed on ``stack`` to be counted too."""
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            names[(selection.alias or selection.name).value] += 1
            if selection.selection_set is not None:
                stack.append(selection.selection_set)
        elif isinstance(selection, InlineFragmentNode):
            _collect(selection.selection_set, names, spreads, [])
            stack.append(selection.selection_set)  # the rule visits it on its own too
        elif isinstance(selection, FragmentSpreadNode):
            spreads.add(selection.name.value)
