"""S3 loses every object and its bucket while evaluations run (tests/support/chaos.py's
"s3-empty" empties it before submitting, so it cannot see this): the runs that find their
shards gone send their evaluations back to have them prepared again
(shared/db/lost_objects.py), and none is failed.

Used by tests/integration/test_chaos.py and benchmarks/chaos.py ("s3-lost-while-running").
"""

from __future__ import annotations

import time

from tests.support.chaos import ChaosStack, Outcome


def lose_objects_while_running(
    chaos: ChaosStack, *, in_flight: int, timeout_s: float, rounds: int = 1
) -> Outcome:
    """``in_flight`` evaluations (distinct seeds: distinct shards), each measuring about a
    second on the stack's one agent; once one is RUNNING (the others prepared and queued
    behind it, or still preparing), every object and the bucket are deleted, ``rounds``
    times a second apart (a second round meets shards prepared again; each round may cost
    an evaluation two of its ``lost_object_tries``, a measurement and then its shards)."""
    ids = [
        chaos.submit(
            seed=500 + i,
            samples=64,
            settings={"minDurationS": 1, "targetQps": 200},
            backendOptions={"service_time_ms": 2},
        )
        for i in range(in_flight)
    ]
    chaos.wait_state(ids[0], lambda r: r["state"] == "RUNNING", 60)
    for _ in range(rounds):
        chaos.empty_object_store()
        time.sleep(1.0)
    since = time.monotonic()
    return chaos.settle("S3 lost while running", ids, since=since, timeout_s=timeout_s)
