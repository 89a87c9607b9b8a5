"""LoadGen's early-stopping arithmetic ahead of a run (core/early_stopping.py), checked
against LoadGen's own estimate after a short Server run."""

from __future__ import annotations

import math
import re

import pytest

from services.core.early_stopping import (
    duration_warning,
    min_queries,
    probe_duration_s,
    probe_queries,
    sized_probe_s,
)
from services.core.find_peak_search import DURATION_MARGIN
from services.core.request import RunRequest
from services.embedded.bench import run_bench
from shared.settings import Settings


def test_the_minimums_mlperf_publishes() -> None:
    # None over the bound: n >= ln(0.01) / ln(p). One over it: MLPerf's tables.
    assert [min_queries(p) for p in (90, 95, 99, 99.9)] == [44, 90, 459, 4603]
    assert [min_queries(p, 1) for p in (90, 95, 99, 99.9)] == [64, 130, 662, 6636]
    for p in (90, 99):
        assert min_queries(p) == math.ceil(math.log(0.01) / math.log(p / 100))


def test_more_queries_over_the_bound_need_more_queries() -> None:
    needed = [min_queries(99, over) for over in range(5)]
    assert needed == sorted(needed) and len(set(needed)) == 5


def test_probes_are_sized_from_their_rate() -> None:
    assert probe_queries(99) == 662
    assert probe_queries(50) == 500  # the stability rule's samples, where those are more
    assert probe_duration_s(20, 99) == pytest.approx(DURATION_MARGIN * 662 / 20)
    assert probe_duration_s(2000, 99) == pytest.approx(DURATION_MARGIN * 662 / 2000)
    assert sized_probe_s(0.5, 99.9) == 600.0  # capped
    assert sized_probe_s(0.5, 99.9, cap_s=30) == 30


def test_a_short_duration_is_said_before_the_search() -> None:
    said = duration_warning(5, 20, 99)
    assert said is not None
    assert "662" in said and "42 s or more" in said
    assert duration_warning(60, 20, 99) is None


@pytest.mark.parametrize("bad", [0, 100, -1, float("nan")])
def test_a_percentile_outside_0_100_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="percentile"):
        min_queries(bad)


@pytest.mark.parametrize("percentile", [90.0, 99.0])
def test_loadgen_asks_for_the_same_count(settings: Settings, percentile: float) -> None:
    """32 queries, all far under a 1 s bound: LoadGen says how many more it needs."""
    request = RunRequest(
        model="tests/fixtures/tiny_cnn.yaml",
        framework="null",
        scenario="server",
        settings={
            "min_duration_s": 0.2,
            "target_qps": 100,
            "target_latency_ms": 1000,
            "latency_percentile": percentile,
            "max_query_count": 32,
        },
        samples=8,
    )
    report = run_bench(request, settings)
    performance = report["performance"]
    text = " ".join(str(performance["validity"]["early_stopping_result"]).split())
    more = re.search(r"at least (\d+) more queries", text)
    assert more is not None, text
    processed = int(re.search(r"Processed (\d+) queries", text).group(1))  # type: ignore[union-attr]
    assert processed + int(more.group(1)) == min_queries(percentile)
