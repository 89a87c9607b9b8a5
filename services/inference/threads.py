"""Intra-op thread counts that suit the scenario and the machine's other load.

What we measured: on a 2-CPU machine with one other busy process, SingleStream's p50 was
496 ms with the framework's default threads (2) and 41 ms with one thread. An intra-op
pool splits each operator across its threads and waits for the slowest at the end of
every operator; when a thread shares its CPU with another process it waits a scheduler
time slice for its turn, and so does every operator. More threads than free CPUs
(oversubscription) is what destroys latency; one thread fewer costs far less.

The rule (``default_threads``):

- free CPUs = usable CPUs - the CPUs other processes occupy, rounded up once their load
  passes ``NOISE_CPUS`` (a CPU busy a third of the time still preempts a thread on it
  often enough to stall its peers), at least 1;
- inferences at once = the SUT's workers in Offline and Server (each runs its own
  batches), 1 in SingleStream and MultiStream (LoadGen issues one query at a time);
- threads = max(1, free CPUs // inferences at once), so the pools together never ask for
  more CPUs than are free. On an idle machine with one inference at a time that is every
  usable CPU, what the frameworks pick by default on a machine without hyperthreads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from services.core.scenario import SCENARIOS
from services.inference.backend_interface import BackendOptions
from shared.host_load import occupied_cpus, other_cpus_recent, usable_cpus

# Scenarios whose SUT runs several inferences at once, one per worker.
_CONCURRENT_SCENARIOS = frozenset({"offline", "server"})


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    reason: str  # e.g. "threads=1: single-stream on 2 usable CPUs, 1.0 CPUs busy with other ..."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def default_threads(
    *, scenario: str, usable_cpus: int, other_cpus: float | None, workers: int = 1
) -> ThreadChoice:
    """The intra-op thread count for one run, and why (see the module docstring).

    ``other_cpus``: CPUs other processes keep busy now (shared.host_load.other_cpus_now);
    None where it could not be measured, then counted as none and said so.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario: {scenario!r} is not one of {', '.join(SCENARIOS)}")
    if usable_cpus < 1:
        raise ValueError(f"usable_cpus: must be 1 or more, got {usable_cpus}")
    if workers < 1:
        raise ValueError(f"workers: must be 1 or more, got {workers}")
    if other_cpus is not None and not (other_cpus >= 0 and math.isfinite(other_cpus)):
        raise ValueError(
            f"other_cpus: must be a finite number of CPUs, 0 or more; got {other_cpus}"
        )
    measured = other_cpus is not None
    load = other_cpus if other_cpus is not None else 0.0
    free = max(1, usable_cpus - occupied_cpus(load))
    at_once = workers if scenario in _CONCURRENT_SCENARIOS else 1
    threads = max(1, free // at_once)
    # As a person says it: "2 usable CPUs, 1.0 CPUs busy with other work, 1 free".
    busy = f"{load:.1f} CPUs busy with other work" if measured else "other load unmeasured"
    why = "one inference at a time" if at_once == 1 else f"shared by {at_once} SUT workers"
    reason = f"threads={threads}: {scenario} on {_plural(usable_cpus, 'usable CPU')}, {busy}"
    reason += f", {free} free ({why})"
    if threads * at_once > free:
        reason += f"; still oversubscribed: lower --workers to {free} or fewer"
    return ThreadChoice(threads=threads, reason=reason)


def choose_threads(
    *,
    requested: int,
    scenario: str,
    usable_cpus: int,
    other_cpus: float | None,
    workers: int = 1,
) -> ThreadChoice:
    """The user's ``--threads`` when given (> 0), else ``default_threads``.

    A request is honoured as asked; its reason says when it oversubscribes the free CPUs,
    so a slow result explains itself.
    """
    if requested < 0:
        raise ValueError(f"threads: must be 0 (choose for me) or more, got {requested}")
    suggested = default_threads(
        scenario=scenario, usable_cpus=usable_cpus, other_cpus=other_cpus, workers=workers
    )
    if requested == 0:
        return suggested
    at_once = workers if scenario in _CONCURRENT_SCENARIOS else 1
    free = max(1, usable_cpus - occupied_cpus(other_cpus or 0.0))
    reason = f"threads={requested}: as asked (--threads)"
    if requested * at_once > free:
        reason += (
            f"; {requested * at_once} threads on {_plural(free, 'free CPU')} oversubscribe "
            f"them, which inflates latency (suggested: --threads {suggested.threads})"
        )
    return ThreadChoice(threads=requested, reason=reason)


def with_scenario_threads(
    options: BackendOptions, scenario: str, *, workers: int = 1
) -> tuple[BackendOptions, ThreadChoice]:
    """``options`` with intra-op threads chosen for the scenario when left at 0 (the
    framework's default oversubscribes a shared machine), and the reason either way."""
    # The load a run just measured, when one did (a sweep's next point, a worker's next
    # run), spares the half-second probe between runs.
    load = other_cpus_recent()
    choice = choose_threads(
        requested=options.intra_op_threads,
        scenario=scenario,
        usable_cpus=usable_cpus(),
        other_cpus=load.other_cpus,
        workers=workers,
    )
    choice = replace(choice, reason=f"{choice.reason}; other load {load.source}")
    return replace(options, intra_op_threads=choice.threads), choice
