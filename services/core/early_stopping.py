"""LoadGen's early-stopping arithmetic, ahead of a run: how many queries a latency
percentile needs, and so how long a Server probe at a given rate must run.

LoadGen judges a tail-latency bound at ``percentile`` p with 99 % confidence: a run of n
queries with h over the bound passes only when a Binomial(n, 1 - p) count is at most h with
probability 1 % or less (the "early stopping" estimate of mlperf_log_summary.txt). With no
query over the bound that is n >= ln(0.01) / ln(p): 44 queries at p90, 459 at p99 (LoadGen
printed "at least 12 more" after 32 queries at p90 and "427 more" at p99, the same
numbers; tests/services/core/test_early_stopping.py asks it). A probe near the peak has
some queries over the bound, so probes are sized to pass with one: 64 at p90, 662 at p99,
6,636 at p99.9, the minimums MLPerf publishes.
"""

from __future__ import annotations

import math

from services.core.find_peak_search import DURATION_MARGIN
from services.core.stability import MIN_SERVER_SAMPLES, WINDOWS

CONFIDENCE = 0.99  # LoadGen's, for every percentile
# Queries over the bound a sized probe may have and still pass early stopping.
SIZED_FOR_OVERLATENCY = 1
# The longest probe a search sizes by itself: a slower rate gets this and, if LoadGen
# cannot judge it then, the search says so and what would (find_peak_search.conclude).
MAX_SIZED_PROBE_S = 600.0
# The sum below is exact for any n; past this many queries no percentile we accept
# (99.9 at most) needs more, so the search stops there.
MAX_QUERIES = 10_000_000


def _binomial_cdf(successes: int, trials: int, p: float) -> float:
    """P(Binomial(trials, p) <= successes), summed in logs (no overflow at large n)."""
    log_q = math.log1p(-p)
    total = 0.0
    for k in range(successes + 1):
        log_term = (
            math.lgamma(trials + 1)
            - math.lgamma(k + 1)
            - math.lgamma(trials - k + 1)
            + k * math.log(p)
            + (trials - k) * log_q
        )
        total += math.exp(log_term)
    return total


def min_queries(percentile: float, overlatency: int = 0) -> int:
    """The fewest queries with ``overlatency`` of them over the bound for which LoadGen's
    early stopping can say the ``percentile`` (e.g. 99) latency is within it."""
    if not 0 < percentile < 100:
        raise ValueError(f"percentile: {percentile:g}; accepted: above 0, below 100")
    if overlatency < 0:
        raise ValueError(f"overlatency: {overlatency}; accepted: 0 or more queries")
    tail = 1.0 - percentile / 100.0
    # The count is monotone in n: bisect between a first guess that passes and one that
    # does not (n = overlatency + 1 cannot pass: every query there may be over the bound).
    low, high = overlatency, max(overlatency + 1, 2 * math.ceil(math.log(0.01) / math.log1p(-tail)))
    while _binomial_cdf(overlatency, high, tail) > 1.0 - CONFIDENCE:
        low, high = high, high * 2
        if high > MAX_QUERIES:
            raise ValueError(f"percentile: {percentile:g} needs over {MAX_QUERIES:,} queries")
    while high - low > 1:
        middle = (low + high) // 2
        if _binomial_cdf(overlatency, middle, tail) <= 1.0 - CONFIDENCE:
            high = middle
        else:
            low = middle
    return high


def probe_queries(percentile: float) -> int:
    """Queries a Server probe is sized for: early stopping with one query over the bound,
    and the stability rule's samples."""
    return max(min_queries(percentile, SIZED_FOR_OVERLATENCY), MIN_SERVER_SAMPLES * WINDOWS)


def probe_duration_s(qps: float, percentile: float) -> float:
    """Seconds of schedule a Server probe at ``qps`` needs to be judged at ``percentile``:
    its queries at that rate, with the margin for Poisson arrivals."""
    if not (qps > 0 and math.isfinite(qps)):
        raise ValueError(f"qps: {qps}; accepted: a positive rate")
    return DURATION_MARGIN * probe_queries(percentile) / qps


def sized_probe_s(qps: float, percentile: float, cap_s: float = MAX_SIZED_PROBE_S) -> float:
    """``probe_duration_s``, at most ``cap_s``."""
    return min(probe_duration_s(qps, percentile), cap_s)


def duration_warning(duration_s: float, qps: float, percentile: float) -> str | None:
    """What to say before a search whose probes run ``duration_s`` when a probe at ``qps``
    needs longer to be judged; None when it is long enough."""
    needed = probe_duration_s(qps, percentile)
    if duration_s >= needed:
        return None
    return (
        f"probes of {duration_s:g} s at {qps:.3g} QPS hold about {duration_s * qps:.0f} "
        f"queries; LoadGen's early stopping at p{percentile:g} needs "
        f"{min_queries(percentile, SIZED_FOR_OVERLATENCY)} with one over the bound (the "
        f"stability rule {MIN_SERVER_SAMPLES * WINDOWS}): {math.ceil(needed)} s or more, or "
        "leave the duration out to size each probe from its rate"
    )
