"""Tables at a console's width: the least important columns left out and named, ids
whole, long words wrapped rather than cut."""

from __future__ import annotations

import io

from rich.console import Console

from services.cli.tables import Column, fitted_table

COLUMNS = (
    Column("id", priority=100, wrap=False),
    Column("created", priority=10, wrap=False),
    Column("path", priority=50, min_width=12),
    Column("figure", priority=90, wrap=False, justify="right"),
)
PATH = "/home/someone/.benchstack/logs/a-service-with-a-long-name/service.log"
ROWS = [["0123456789abcdef", "2026-12-07T23:53:55", PATH, "1234.56"]]


def rendered(width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(
        fitted_table(COLUMNS, ROWS, width=width)
    )
    return out.getvalue()


def test_a_wide_console_keeps_every_column_on_one_line() -> None:
    text = rendered(200)
    assert all(header in text for header in ("id", "created", "path", "figure"))
    assert PATH in text and "left out" not in text
    assert len([line for line in text.splitlines() if "0123456789abcdef" in line]) == 1


def test_a_narrow_console_leaves_out_the_least_important_column_and_says_so() -> None:
    text = rendered(60)
    assert "2026-12-07" not in text
    assert "left out at 60 columns: created (a wider terminal shows them)" in " ".join(text.split())
    assert "0123456789abcdef" in text and "1234.56" in text
    assert "…" not in text  # rich's mark for a cut cell
    assert all(len(line) <= 60 for line in text.splitlines())


def test_a_path_wraps_over_lines_instead_of_being_cut() -> None:
    text = rendered(60)
    # The path's pieces, read down its column, make the whole path again.
    pieces = [line.split("│")[2].strip() for line in text.splitlines() if line.count("│") == 4]
    assert "".join(pieces) == PATH


def test_at_the_narrowest_the_highest_priority_column_stays_whole() -> None:
    text = rendered(20)
    assert "0123456789abcdef" in text
    assert "left out at 20 columns: created, path, figure" in " ".join(text.split())
