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


def _widest(column: Column, cells: Sequence[str]) -> int:
    """The column's width with every cell and its header on one line."""
    return max([cell_width(c) for c in cells] + [cell_width(column.header)])


def _overhead(count: int, box: boxes.Box | None, show_edge: bool) -> int:
    """Characters a table spends besides its cells: padding and rules."""
    padding = 2 * count  # rich's default padding: one space each side of a cell
    if box is None:
        return padding
    return padding + (count - 1) + (2 if show_edge else 0)


def column_widths(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    box: boxes.Box | None = boxes.HEAVY_HEAD,
    show_edge: bool = True,
) -> dict[int, int]:
    """The width of each column kept (by index) for a table ``width`` wide at most.

    Every column first gets the narrowest it can be (a wrapping one its ``min_width``,
    a fixed one its widest cell); while those do not fit, the lowest priority column is
    left out. What room is left goes to the wrapping columns, highest priority first: to
    those it lets onto one line whole, then the rest, so the most important wrap least."""
    widest = [_widest(column, [row[i] for row in rows]) for i, column in enumerate(columns)]
    widths = {
        i: min(widest[i], column.min_width) if column.wrap else widest[i]
        for i, column in enumerate(columns)
    }
    # Lowest priority first; of equal ones the rightmost, so a table loses its tail.
    order = sorted(widths, key=lambda i: (columns[i].priority, -i))
    while len(widths) > 1 and sum(widths.values()) + _overhead(len(widths), box, show_edge) > width:
        del widths[order.pop(0)]
    room = width - sum(widths.values()) - _overhead(len(widths), box, show_edge)
    by_priority = sorted(widths, key=lambda i: (-columns[i].priority, i))
    # First the columns the room lets onto one line whole, then the rest wrap less.
    for whole_only in (True, False):
        for i in by_priority:
            grown = min(widest[i], widths[i] + max(room, 0))
            if grown == widest[i] or not whole_only:
                room -= grown - widths[i]
                widths[i] = grown
    return widths


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
    widths = column_widths(columns, rows, width, box=box, show_edge=show_edge)
    dropped = [columns[i].header for i in range(len(columns)) if i not in widths]
    notes = [caption] if caption else []
    if dropped:
        notes.append(
            f"left out at {width} columns: {', '.join(dropped)} (a wider terminal shows them)"
        )
    table = Table(
        box=box,
        show_edge=show_edge,
        show_header=show_header,
        caption="\n".join(notes) or None,
        caption_justify="left",
        **table_options,
    )
    for i, column_width in widths.items():
        column = columns[i]
        table.add_column(
            column.header,
            justify=column.justify,
            style=column.style,
            no_wrap=not column.wrap,
            width=column_width,
            # A word longer than the column (a path) goes on over the next lines.
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(row[i] for i in widths))
    return table
