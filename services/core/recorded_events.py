"""What the SUT recorded of one performance run, ordered as its judges read it.

The stability verdict (stability.py) and the confidence intervals (confidence.py) both
cut the run's completion events into the same windows and read each window's samples,
span and latencies; both start from this one value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class RecordedEvents:
    # The scenario, lower case without separators: "offline", "server", "singlestream", ...
    kind: str
    # Each completion event's finish (ns) in ascending order, and the samples it completed.
    finished: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    # Each event's samples' latencies (ns), in the same order.
    latencies_ns: list[npt.NDArray[np.float64]]
    # The samples' arrivals (ns), ascending.
    arrivals: npt.NDArray[np.int64]
    # Where the first window starts: the first arrival, else the first completion.
    origin: int
    # SUT workers completing in lockstep: a window holds a multiple of them.
    concurrency: int


def recorded_events(
    *,
    scenario: str,
    completions: Sequence[tuple[int, int]],
    latencies_ns: Sequence[int] | npt.NDArray[np.int64],
    arrivals_ns: Sequence[int] | npt.NDArray[np.int64],
    concurrency: int = 1,
) -> RecordedEvents:
    """``completions`` are (finished_ns, samples) in completion order and ``latencies_ns``
    one per sample in the same order, as the SUT records them; ``scenario`` is LoadGen's
    name or ours ("Offline" / "offline")."""
    finished = np.asarray([c[0] for c in completions], dtype=np.int64)
    counts = np.asarray([c[1] for c in completions], dtype=np.int64)
    latencies = np.asarray(latencies_ns, dtype=np.float64)
    if latencies.size != int(counts.sum()):
        raise ValueError(
            f"latencies_ns: {latencies.size} values for {int(counts.sum())} completed samples"
        )
    # Latencies are recorded in completion order, one per sample; group them by event.
    by_event = np.split(latencies, np.cumsum(counts)[:-1])
    order = np.argsort(finished, kind="stable")
    arrivals = np.sort(np.asarray(arrivals_ns, dtype=np.int64))
    first = int(arrivals[0]) if arrivals.size else int(finished[order[0]]) if order.size else 0
    return RecordedEvents(
        kind=scenario.lower().replace("-", "").replace("_", ""),
        finished=finished[order],
        counts=counts[order],
        latencies_ns=[by_event[i] for i in order],
        arrivals=arrivals,
        origin=first,
        concurrency=max(1, concurrency),
    )
