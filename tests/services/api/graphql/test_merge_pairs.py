"""The pairs graphql-core's overlap rule compares, counted per selection set as written:
fields sharing a response name (inline fragments' joined in), fragments spread side by
side, and those fields with each fragment."""

from __future__ import annotations

import pytest
from graphql import parse

from services.api.graphql.merge_pairs import merge_pairs


@pytest.mark.parametrize(
    ("document", "pairs"),
    [
        ("{ evaluations { totalCount } agents { id } }", 0),
        ("{ a: __typename a: __typename a: __typename b: __typename }", 3),
        # Inline fragments' fields join their parent's field map.
        ("{ evaluations { totalCount } ... on Query { evaluations { totalCount } } }", 1),
        # Two spreads: one pair of fragments, and the one field with each of them.
        (
            "{ x: __typename ...A ...B } fragment A on Query { y: __typename } "
            "fragment B on Query { y: __typename }",
            1 + 2,
        ),
        # Each selection set counts where it is written, however often it is spread.
        ("{ ...A ...A } fragment A on Query { evaluations { totalCount totalCount } }", 1),
    ],
)
def test_pairs_are_counted_per_selection_set_as_written(document: str, pairs: int) -> None:
    assert merge_pairs(parse(document)) == pairs


def test_many_copies_of_one_field_count_quadratically() -> None:
    wide = "{" + " evaluations { totalCount }" * 300 + " }"
    assert merge_pairs(parse(wide)) == 300 * 299 // 2
