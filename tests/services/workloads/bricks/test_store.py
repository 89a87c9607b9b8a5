"""Brick figures in the database: per system, a first figure kept, recipes by model."""

from __future__ import annotations

from pathlib import Path

from services.workloads.bricks.store import find_recipes, save_measured, save_recipe, system_results
from shared.db.migrations import upgrade_head
from shared.db.session import session_scope


def timing(median_ms: float) -> dict[str, float]:
    return {"median_ms": median_ms, "mean_ms": median_ms, "p90_ms": median_ms, "queries": 5}


def test_timings_are_kept_per_system_and_a_brick_keeps_its_first_figure(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    upgrade_head(url)
    with session_scope(url) as session:
        memory = {"ms_per_mb": 0.05}
        new = save_measured(
            session, "host-a", {"s1": timing(1.0)}, {"median_ms": 0.1}, "e1", memory
        )
        assert new == 1
        # A second agent of the same system measured s1 too: the first figure stays.
        new = save_measured(
            session,
            "host-a",
            {"s1": timing(9.0), "s2": timing(2.0)},
            {"median_ms": 0.2},
            "e2",
            {"ms_per_mb": 0.09},
        )
        assert new == 1
        save_measured(session, "host-b", {"s1": timing(5.0)}, None, "e3")
    with session_scope(url) as session:
        a = system_results(session, "host-a")
        assert {s: t["median_ms"] for s, t in a.bricks.items()} == {"s1": 1.0, "s2": 2.0}
        assert a.floor == {"median_ms": 0.2}  # the latest floor
        assert a.memory == {"ms_per_mb": 0.05}  # the first memory read, as for a brick
        b = system_results(session, "host-b")
        assert b.bricks["s1"]["median_ms"] == 5.0 and b.floor is None and b.memory is None


def test_recipes_are_found_by_model_and_granularity(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    upgrade_head(url)
    recipe = {"model": "m", "granularity": 2, "input_shape": [1, 3, 32, 32], "steps": []}
    with session_scope(url) as session:
        save_recipe(session, recipe)
        save_recipe(session, {**recipe, "granularity": 1})
        save_recipe(session, recipe)  # saved again: replaced, not doubled
    with session_scope(url) as session:
        assert [r["granularity"] for r in find_recipes(session, "m")] == [1, 2]
        assert find_recipes(session, "m", 2) == [recipe]
        assert find_recipes(session, "other") == []
