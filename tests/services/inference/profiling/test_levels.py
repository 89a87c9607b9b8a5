"""Trace levels: parsing, aliases, and which instruments and passes each one runs."""

from __future__ import annotations

import pytest

from services.core.trace_levels import TRACE_LEVELS
from services.inference.profiling.levels import (
    TraceLevelError,
    instruments_for,
    parse_trace_level,
    passes_for,
)


def test_every_accepted_level_parses_in_any_case() -> None:
    for level in TRACE_LEVELS:
        assert parse_trace_level(level.lower()) in TRACE_LEVELS


def test_application_is_model() -> None:
    assert parse_trace_level("application") == "MODEL"


def test_unknown_level_names_the_field_and_the_accepted_levels() -> None:
    with pytest.raises(TraceLevelError, match=r"--trace-level: 'kernel'.*NONE, APPLICATION"):
        parse_trace_level("kernel", field="--trace-level")


def test_none_instruments_nothing_and_runs_only_the_uninstrumented_pass() -> None:
    assert not instruments_for("NONE").any
    assert passes_for("NONE") == ("NONE",)


def test_each_level_starts_with_the_uninstrumented_pass_and_includes_model() -> None:
    for level in TRACE_LEVELS:
        passes = passes_for(level)
        assert passes[0] == "NONE"
        if level != "NONE":
            assert "MODEL" in passes
            assert instruments_for(level).model


def test_full_runs_every_instrumented_pass() -> None:
    assert set(passes_for("FULL")) == {"NONE", "MODEL", "FRAMEWORK", "LIBRARY", "SYSTEM"}
    full = instruments_for("FULL")
    assert full.framework and full.library and full.system
