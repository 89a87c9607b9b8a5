"""Latency objectives of a Server run: time to first token (TTFT) and time per output
token (TPOT) at a percentile, given in milliseconds or named after an MLPerf LLM benchmark.

The presets are MLPerf's own: the ``<model>.Server.ttft_latency`` / ``tpot_latency`` lines
and ``*.Server.target_latency_percentile = 99`` of the mlperf.conf that LoadGen 6.0.17
(mlcommons-loadgen, the pinned version) carries inside itself; the "-interactive" ones are
MLPerf's interactive category. tests/services/workloads/generative/test_bounds.py reads
them back from LoadGen (TestSettings.FromConfig) so a LoadGen upgrade cannot leave them stale.
"""

from __future__ import annotations

from dataclasses import dataclass

# Name -> (MLPerf benchmark in mlperf.conf, TTFT ms, TPOT ms).
PRESETS: dict[str, tuple[str, float, float]] = {
    "llama3.1-8b": ("llama3_1-8b", 2000.0, 100.0),
    "llama3.1-8b-interactive": ("llama3_1-8b-interactive", 500.0, 30.0),
    "llama2-70b": ("llama2-70b", 2000.0, 200.0),
    "llama2-70b-interactive": ("llama2-70b-interactive", 450.0, 40.0),
}
DEFAULT_PRESET = "llama3.1-8b"
MLPERF_PERCENTILE = 99.0
# The largest objective accepted: an hour (LoadGen takes nanoseconds in 64 bits).
MAX_BOUND_MS = 3_600_000.0


@dataclass(frozen=True)
class TokenBounds:
    """The objectives a Server run is judged against, and where they came from."""

    ttft_ms: float
    tpot_ms: float
    percentile: float
    source: str

    def to_dict(self) -> dict[str, float | str]:
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "percentile": self.percentile,
            "source": self.source,
        }


def token_bounds(
    preset: str | None,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    percentile: float | None = None,
) -> TokenBounds:
    """The preset's bounds (the default one when none is named), each overridden by the
    figure given; a clear error naming the field when one is not accepted."""
    name = preset or DEFAULT_PRESET
    if name not in PRESETS:
        raise ValueError(f"bounds: {name!r} is not a preset; accepted: {', '.join(PRESETS)}")
    benchmark, preset_ttft, preset_tpot = PRESETS[name]
    for field, value in (("ttft_ms", ttft_ms), ("tpot_ms", tpot_ms)):
        if value is not None and not 0 < value <= MAX_BOUND_MS:
            raise ValueError(f"{field}: {value} is outside the accepted range (0, {MAX_BOUND_MS}]")
    if percentile is not None and not 0 < percentile < 100:
        raise ValueError(f"percentile: {percentile} is outside the accepted range (0, 100)")
    given = [f for f, v in (("TTFT", ttft_ms), ("TPOT", tpot_ms)) if v is not None]
    source = f"mlperf.conf {benchmark}.Server (LoadGen 6.0.17)"
    if len(given) == 2:
        source = "given"
    elif given:
        source += f", {given[0]} given"
    return TokenBounds(
        ttft_ms=preset_ttft if ttft_ms is None else ttft_ms,
        tpot_ms=preset_tpot if tpot_ms is None else tpot_ms,
        percentile=MLPERF_PERCENTILE if percentile is None else percentile,
        source=source,
    )
