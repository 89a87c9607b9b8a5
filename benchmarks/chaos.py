"""The fault campaign: kill -9 each worker kind mid-run, restart the broker (also behind a
busy agent), stop the database, take S3 away (refusing, hung, back empty, emptied while
evaluations run), send a folder of image bombs and loop the too-costly 20-alias query
beside honest work, each against a whole stack on its own Postgres and Redis, with the
DEFAULT recovery settings (10 s heartbeats, 30 s claim lease, a sweep every 10 s, 45 s
to call an evaluation stalled, MAX_RUN_SECONDS 3600). Prints, per scenario: attempts,
completed, failed, lost, duplicated, stuck, reasons left on SUCCEEDED ones and the
recovery time (from the end of the fault, or the replacement worker's start, to the last
evaluation terminal).

The CI version (tests/integration/test_chaos.py) runs the same scenarios with short
outages and fast settings. Run on a quiet machine from the repository root:

    python benchmarks/chaos.py                      # every scenario, 30 s outages
    python benchmarks/chaos.py --scenario s3-down --outage 60
    python benchmarks/chaos.py --scenario broker --in-flight 6
    python benchmarks/chaos.py --scenario broker-busy-agent --busy 60  # from the run's end
    python benchmarks/chaos.py --scenario image-bomb --scenario costly-query

Below the table, a line per hostile scenario says what became of the hostile part (the
bomb's state and reason, the largest process, kernel kills; the costly query's answers and
an ordinary query's latency meanwhile).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.chaos import (
    ChaosStack,
    Outcome,
    empty_object_store,
    kill_worker_mid_run,
    restart_broker,
    restart_broker_behind_busy_agent,
    stop_database,
    stop_object_store,
)
from tests.support.chaos_attacks import costly_queries, image_bombs
from tests.support.chaos_lost_objects import lose_objects_while_running

WORKERS = ("inference", "preprocess", "aggregator", "scheduler")
SCENARIOS = (
    *WORKERS,
    "broker",
    "broker-busy-agent",
    "database",
    "s3-down",
    "s3-hung",
    "s3-empty",
    "s3-lost-while-running",
    "image-bomb",
    "costly-query",
)
# The deployment defaults, except the heartbeat the ephemeral stack shortens for tests.
DEFAULTS = {"BENCHSTACK_AGENT_HEARTBEAT_SECONDS": "10"}


def run(scenario: str, args: argparse.Namespace) -> Outcome:
    chaos = ChaosStack(DEFAULTS)
    try:
        if scenario in WORKERS:
            return kill_worker_mid_run(chaos, scenario, timeout_s=args.timeout)
        if scenario == "broker":
            return restart_broker(chaos, in_flight=args.in_flight, timeout_s=args.timeout)
        if scenario == "broker-busy-agent":
            return restart_broker_behind_busy_agent(
                chaos, queued=args.in_flight, busy_s=args.busy, timeout_s=args.timeout
            )
        if scenario in ("s3-down", "s3-hung"):
            return stop_object_store(
                chaos,
                in_flight=args.in_flight,
                outage_s=args.outage,
                timeout_s=args.timeout,
                hung=scenario == "s3-hung",
            )
        if scenario == "image-bomb":
            return image_bombs(chaos, in_flight=args.in_flight, timeout_s=args.timeout)
        if scenario == "costly-query":
            return costly_queries(
                chaos,
                loops=2,
                in_flight=args.in_flight,
                seconds=args.outage,
                timeout_s=args.timeout,
            )
        if scenario == "s3-lost-while-running":
            return lose_objects_while_running(
                chaos, in_flight=args.in_flight, timeout_s=args.timeout
            )
        if scenario == "s3-empty":
            return empty_object_store(chaos, in_flight=args.in_flight, timeout_s=args.timeout)
        return stop_database(
            chaos, in_flight=args.in_flight, outage_s=args.outage, timeout_s=args.timeout
        )
    finally:
        chaos.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SCENARIOS,
        help="repeatable; default: all",
    )
    parser.add_argument("--in-flight", type=int, default=6)
    parser.add_argument(
        "--busy", type=float, default=60.0, help="the busy agent's run, seconds (broker-busy-agent)"
    )
    parser.add_argument(
        "--outage",
        type=float,
        default=30.0,
        help="database or S3 outage, or the costly query's loops, seconds",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="give up after, seconds")
    args = parser.parse_args()
    scenarios = args.scenario or list(SCENARIOS)
    columns = (
        "scenario",
        "attempts",
        "completed",
        "failed",
        "lost",
        "duplicated",
        "stuck",
        "stale_reasons",
        "recovery_s",
    )
    rows = []
    outcomes = []
    started = time.monotonic()
    for scenario in scenarios:
        outcome = run(scenario, args)
        rows.append(outcome.row())
        outcomes.append(outcome)
        for reason in outcome.failed:
            print(f"  {outcome.scenario}: FAILED: {reason[:200]}", flush=True)
        print(outcome.row(), flush=True)
    print(f"\nfault campaign, default recovery settings ({time.monotonic() - started:.0f} s)")
    print(" | ".join(columns))
    print(" | ".join("---" for _ in columns))
    for row in rows:
        print(" | ".join("-" if row[c] is None else str(row[c]) for c in columns))
    for outcome in outcomes:
        if outcome.hostile:
            print(f"{outcome.scenario}: {outcome.hostile}")


if __name__ == "__main__":
    main()
