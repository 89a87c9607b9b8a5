"""A deterministic host for find-peak's launchers: the report a Server probe at a rate and
duration gives, judged by the real ``core.find_peak_search.judge``. Within ``capacity`` a
probe keeps up with p99 at 5 ms; above it the queue pushes p99 to 500 ms. LoadGen's early
stopping (662 queries at p99 with one over the bound) and the stability rule (500
samples) decide VALID / STABLE from the queries the duration holds; a rate in ``jittery``
puts more queries over the bound the first time it runs, so that probe meets the bound
unjudged however long it ran, and LoadGen asks for ``JITTER_QUERIES`` more (every time
it runs: ``every_time``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JITTER_QUERIES = 900
EARLY_STOPPING_QUERIES = 662  # core/early_stopping.probe_queries(99)
STABILITY_SAMPLES = 500


@dataclass
class CannedHost:
    capacity: float
    jittery: set[float] = field(default_factory=set)
    # Jittery at those rates every time, not only the first.
    every_time: bool = False
    # (qps, min_duration_s) of each Server run, in order; the Offline estimate's is (0, 0).
    ran: list[tuple[float, float]] = field(default_factory=list)

    def estimate(self, run_id: str) -> dict[str, Any]:
        """An Offline run: the throughput an unloaded queue reaches, above the Server peak."""
        self.ran.append((0.0, 0.0))
        return self._report(run_id, 1.5 * self.capacity, 1.5 * self.capacity, 5.0, 0, "")

    def server(self, run_id: str, qps: float, duration_s: float) -> dict[str, Any]:
        self.ran.append((qps, duration_s))
        queries = int(qps * duration_s)
        over = qps > self.capacity
        completed = 0.8 * self.capacity if over else qps
        early = ""
        missing = EARLY_STOPPING_QUERIES - queries
        first = [q for q, _ in self.ran].count(qps) == 1
        if qps in self.jittery and (first or self.every_time):
            missing = JITTER_QUERIES
        if missing > 0:
            early = f"Would need to run at least {missing} more queries"
        report = self._report(run_id, completed, qps, 500.0 if over else 5.0, queries, early)
        stable = queries >= STABILITY_SAMPLES
        report["stability"] = {
            "verdict": "STABLE" if stable else "INSUFFICIENT",
            "reasons": [] if stable else [f"{queries} samples"],
        }
        return report

    @staticmethod
    def _report(
        run_id: str, completed: float, scheduled: float, p99_ms: float, queries: int, early: str
    ) -> dict[str, Any]:
        return {
            "run_id": run_id,
            "settings": {"backend_options": {}},
            "performance": {
                "latency": {"mean_ns": 1e6, "percentiles_ns": {"p99": p99_ms * 1e6}},
                "samples_per_second": completed,
                "scheduled_samples_per_second": scheduled,
                "query_count": queries,
                "validity": {
                    "result": "INVALID" if early else "VALID",
                    "reasons": ["early stopping: run longer"] if early else [],
                    "early_stopping_result": early,
                },
            },
        }
