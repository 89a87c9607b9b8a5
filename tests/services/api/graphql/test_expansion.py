"""A document's expanded size: exact within the limit, found with each fragment walked once,
stopped soon past the limit; fragment cycles and undefined fragments named."""

from __future__ import annotations

import pytest
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
)

from benchmarks.api_attacks import fragment_fan_out
from services.api.graphql.expansion import FragmentProblem, expanded_size, fragments_of


def inlined_size(document: DocumentNode) -> int:
    """The same figure by inlining every spread, as the depth and alias rules walk it:
    exponential, for small documents only."""
    fragments = fragments_of(document)

    def count(selection_set: SelectionSetNode) -> int:
        total = 0
        for selection in selection_set.selections:
            total += 1
            if isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                total += count(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                total += count(fragments[selection.name.value].selection_set)
        return total

    return sum(
        count(d.selection_set)
        for d in document.definitions
        if isinstance(d, OperationDefinitionNode)
    )


MIXED = """
query A { evaluations(first: 2) { items { ...Row ... on Evaluation { id ...Row } } } }
query B { ...Top ...Top }
fragment Row on Evaluation { id state runs { ...RunFields } }
fragment RunFields on Run { id validity metrics { name value } }
fragment Top on Query { agents { id } evaluations { totalCount } }
"""


@pytest.mark.parametrize("document", [MIXED, fragment_fan_out(6), "{ __typename }"])
def test_within_the_limit_the_figure_is_every_selection_with_fragments_inlined(
    document: str,
) -> None:
    parsed = parse(document)
    assert expanded_size(parsed, 10**6) == inlined_size(parsed)


def test_the_30_level_fan_out_is_found_over_the_limit_without_expanding_it() -> None:
    # 2^31 selections inlined; each fragment is walked once and the count stops past the
    # limit, so the figure found stays near the limit.
    found = expanded_size(parse(fragment_fan_out(30)), 5000)
    assert 5000 < found <= 2 * 5000 + 10
    assert expanded_size(parse(fragment_fan_out(200)), 5000) > 5000


def test_fragments_no_operation_spreads_are_not_counted() -> None:
    spare = "{ __typename } fragment Spare on Query { a: __typename b: __typename }"
    assert expanded_size(parse(spare), 100) == 1


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ("{ ...A } fragment A on Query { ...A }", "A -> A"),
        (
            "{ ...A } fragment A on Query { x: __typename ...B } fragment B on Query { ...A }",
            "A -> B -> A",
        ),
        # A cycle no operation reaches: graphql-core refuses it too, named here as well.
        ("{ __typename } fragment C on Query { ...D } fragment D on Query { ...C }", "C -> D -> C"),
        (
            "{ ...A } fragment A on Query { evaluations { items { ...E } } } "
            "fragment E on Evaluation { ... on Evaluation { ...F } } "
            "fragment F on Evaluation { ...E }",
            "E -> F -> E",
        ),
    ],
)
def test_a_fragment_cycle_is_refused_naming_it(document: str, named: str) -> None:
    with pytest.raises(FragmentProblem, match=f"cycle: {named}$"):
        expanded_size(parse(document), 10**6)


def test_a_spread_of_an_undefined_fragment_is_named() -> None:
    with pytest.raises(FragmentProblem, match="fragment Nope is spread but not defined"):
        expanded_size(parse("{ ...Nope }"), 100)


def test_a_chain_of_fragments_as_long_as_the_token_limit_allows_is_measured() -> None:
    # 8 tokens a link: about 250 links fit 2,000 tokens; counted without a RecursionError.
    links = 250
    chain = "query { ...L0 } " + " ".join(
        f"fragment L{i} on Query {{ ...L{i + 1} }}" for i in range(links)
    )
    chain += f" fragment L{links} on Query {{ __typename }}"
    assert expanded_size(parse(chain, max_tokens=None), 10**6) == links + 2
