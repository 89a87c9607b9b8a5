"""Layers slowest first, tied where their medians are within noise."""

from __future__ import annotations

from services.inference.profiling.ranking import ranked


def test_layers_within_noise_share_a_rank_and_keep_the_model_s_order() -> None:
    rows = [
        {"name": "late", "median_ms": 5.0, "mean_ms": 5.0, "iqr_ms": 1.0},
        {"name": "early", "median_ms": 4.9, "mean_ms": 4.9, "iqr_ms": 1.0},
        {"name": "first", "median_ms": 9.0, "mean_ms": 9.0, "iqr_ms": 0.1},
        {"name": "small", "median_ms": 1.0, "mean_ms": 1.0, "iqr_ms": 0.1},
    ]
    order = {"first": 0, "early": 1, "late": 2, "small": 3}
    result = ranked(rows, 20, order)
    assert [(r["name"], r["rank"], r["tied"]) for r in result] == [
        ("first", 1, False),
        ("early", 2, True),  # 0.1 ms apart with IQRs of 1 ms over 20 iterations: a tie
        ("late", 2, True),
        ("small", 4, False),
    ]
    # With a narrow spread the same 0.1 ms is a real difference: slower first.
    narrow = [r | {"iqr_ms": 0.01} for r in rows]
    assert [r["name"] for r in ranked(narrow, 20, order)] == ["first", "late", "early", "small"]
