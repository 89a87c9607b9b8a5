"""Tables that fit the console: columns dropped by priority, long words wrapped, ids whole.

Rich, given a table wider than the console, shortens every column and ends each cut cell
with "…", ids and paths included. Here each column says what it can bear instead: an
id or a number is never cut (it keeps its full width), a path or a name wraps onto more
lines, and where even the narrowest form does not fit the least important columns are
left out, and the table's caption names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box as boxes
from rich.table import Table
from rich.text import Text

# `benchstack show` takes any unique prefix of a run id (aggregator.repository.get_run);
# tables print this many characters, never fewer, so what they show can be pasted.
RUN_ID_PREFIX = 8

Justify = Literal["left", "right", "center"]


@dataclass(frozen=True)
class Column:
    """One column: its header, how important it is and how narrow it may become.

    ``priority``: the lower, the sooner it is left out at a narrow console (ties: the
    rightmost first). ``wrap``: False keeps every cell on one line at its full width
    (ids, figures); True lets the cell wrap, long words (paths) folded, down to
    ``min_width`` characters."""

    header: str
    priority: int = 0
    min_width: int = 10
    wrap: bool = True
    justify: Justify = "left"
    style: str | None = None


def cell_width(cell: str) -> int:
    """The width a markup cell takes on one line, markup left out."""
    return max((Text.from_markup(line).cell_len for line in cell.splitlines()), default=0)


def _need(column: Column, cells: Sequence[str]) -> int:
    """The narrowest a column can be: a wrapping one its ``min_width`` (or its widest cell
    when all are narrower), a fixed one its widest cell or header."""
    widest = max([cell_width(c) for c in cells] + [cell_width(column.header)])
    if column.wrap:
        return min(widest, column.min_width)
    return widest


def _overhead(count: int, box: boxes.Box | None, show_edge: bool) -> int:
    """Characters a table spends besides its cells: padding and rules."""
    padding = 2 * count  # rich's default padding: one space each side of a cell
    if box is None:
        return padding
    return padding + (count - 1) + (2 if show_edge else 0)


def kept_columns(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    box: boxes.Box | None = boxes.HEAVY_HEAD,
    show_edge: bool = True,
) -> list[int]:
    """The indexes of the columns that fit ``width``, left out lowest priority first."""
    needs = [_need(column, [row[i] for row in rows]) for i, column in enumerate(columns)]
    kept = list(range(len(columns)))
    # Lowest priority first; of equal ones the rightmost, so a table loses its tail.
    order = sorted(kept, key=lambda i: (columns[i].priority, -i))
    while (
        len(kept) > 1 and sum(needs[i] for i in kept) + _overhead(len(kept), box, show_edge) > width
    ):
        kept.remove(order.pop(0))
    return kept


def fitted_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    width: int,
    box: boxes.Box | None = boxes.HEAVY_HEAD,
    show_edge: bool = True,
    show_header: bool = True,
    caption: str | None = None,
    **table_options: Any,
) -> Table:
    """A rich Table of ``rows`` ``width`` characters wide at most (a console's width), per
    the columns' declarations.

    Columns left out are named in the caption, after ``caption``, so nobody takes a
    missing column for a missing figure."""
    kept = kept_columns(columns, rows, width, box=box, show_edge=show_edge)
    dropped = [columns[i].header for i in range(len(columns)) if i not in kept]
    notes = [caption] if caption else []
    if dropped:
        notes.append(
            f"left out at {width} columns: {', '.join(dropped)} "
            "(a wider terminal shows them)"
        )
    table = Table(
        box=box,
        show_edge=show_edge,
        show_header=show_header,
        caption="\n".join(notes) or None,
        caption_justify="left",
        **table_options,
    )
    for i in kept:
        column = columns[i]
        fixed = None if column.wrap else _need(column, [row[i] for row in rows])
        table.add_column(
            column.header,
            justify=column.justify,
            style=column.style,
            no_wrap=not column.wrap,
            width=fixed,
            # A word longer than the column (a path) goes on over the next lines.
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(row[i] for i in kept))
    return table
