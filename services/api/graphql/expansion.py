"""How large a document is once its fragments are inlined, found before any rule walks it.

Validation rules that follow fragment spreads (Strawberry's depth and alias limits) walk a
fragment again at every use, so their work is the document's *expanded* size, not its
length: ``fragment F0 on Query { ...F1 ...F1 }`` down 30 levels is 1.2 KB of text, well
under the token limit, and 2^31 selections expanded; validating it held an API process
for minutes (issue 53). Here each fragment definition is walked once and its size kept,
so the figure costs one pass over the text; a spread adds its fragment's kept size. A
selection set stops being counted once it passes the limit, so no figure grows past about
twice the limit. Fragment cycles and spreads of undefined fragments are refused here too:
the rules after this would loop on the one and fail with a bare KeyError on the other.
"""

from __future__ import annotations

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)


class FragmentProblem(Exception):
    """A fragment spread in a cycle or naming no fragment; ``str()`` says which."""


def fragments_of(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


class _Expansion:
    """One document's walk: every fragment's expanded size, each found once."""

    def __init__(self, fragments: dict[str, FragmentDefinitionNode], limit: int) -> None:
        self.fragments = fragments
        self.limit = limit
        self.sizes: dict[str, int] = {}
        # The fragments being walked, in order: meeting one of them again is a cycle.
        self.open: list[str] = []

    def selection_set(self, selection_set: SelectionSetNode) -> int:
        total = 0
        for selection in selection_set.selections:
            # Each selection counts once (a rule visits it), plus what it holds.
            total += 1
            if isinstance(selection, FieldNode):
                if selection.selection_set is not None:
                    total += self.selection_set(selection.selection_set)
            elif isinstance(selection, InlineFragmentNode):
                total += self.selection_set(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                total += self.fragment(selection.name.value)
            if total > self.limit:
                break  # over already: the rest cannot bring it back under
        return total

    def fragment(self, name: str) -> int:
        known = self.sizes.get(name)
        if known is not None:
            return known
        if name in self.open:
            cycle = [*self.open[self.open.index(name) :], name]
            raise FragmentProblem(f"fragments spread each other in a cycle: {' -> '.join(cycle)}")
        definition = self.fragments.get(name)
        if definition is None:
            raise FragmentProblem(f"fragment {name} is spread but not defined")
        self.open.append(name)
        size = self.selection_set(definition.selection_set)
        self.open.pop()
        self.sizes[name] = size
        return size


def expanded_size(document: DocumentNode, limit: int) -> int:
    """The selections (fields, fragment spreads, inline fragments) of every operation in
    ``document`` with each spread replaced by its fragment: exact up to ``limit``, and some
    figure above ``limit`` (a lower bound of the true one) past it.

    Raises FragmentProblem for a cycle among fragments (also among fragments no operation
    spreads) or a spread of an undefined fragment that an operation reaches. Recursive,
    one or two frames per level of nesting: the token limit keeps a document that parses
    far from Python's recursion limit, and a RecursionError is the caller's to refuse.
    """
    walk = _Expansion(fragments_of(document), limit)
    total = 0
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            total += walk.selection_set(definition.selection_set)
            if total > limit:
                return total
    for name in walk.fragments:
        walk.fragment(name)  # a cycle no operation reaches is still refused
    return total
