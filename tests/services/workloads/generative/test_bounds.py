from __future__ import annotations

import mlperf_loadgen as lg
import pytest

from services.workloads.generative.bounds import PRESETS, token_bounds


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_loadgens_own(name: str) -> None:
    benchmark, ttft_ms, tpot_ms = PRESETS[name]
    settings = lg.TestSettings()
    assert settings.FromConfig("mlperf.conf", benchmark, "Server", 0) == 0
    assert (settings.ttft_latency, settings.tpot_latency) == (ttft_ms * 1e6, tpot_ms * 1e6)
    assert settings.server_target_latency_percentile == pytest.approx(0.99)


def test_given_figures_override_the_preset_and_are_named() -> None:
    bounds = token_bounds("llama3.1-8b-interactive", tpot_ms=12.5)
    assert (bounds.ttft_ms, bounds.tpot_ms, bounds.percentile) == (500.0, 12.5, 99.0)
    assert "llama3_1-8b-interactive" in bounds.source and ", TPOT given" in bounds.source


def test_refusals_name_the_field() -> None:
    with pytest.raises(ValueError, match="bounds: 'fast' is not a preset; accepted: llama3.1-8b"):
        token_bounds("fast")
    with pytest.raises(ValueError, match=r"ttft_ms: -1.0 is outside"):
        token_bounds(None, ttft_ms=-1.0)
    with pytest.raises(ValueError, match=r"percentile: 100.0 is outside"):
        token_bounds(None, percentile=100.0)
