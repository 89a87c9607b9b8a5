"""`benchstack bricks run`: the suite's unmeasured bricks measured on this host, holding it
as `bench` does; Ctrl-C stops between LoadGen runs and keeps what was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from services.core.workload import CommandKit


def measure_suite(
    kit: CommandKit, suite: Path, queries: int, min_duration: float, threads: int
) -> None:
    """Measure each brick this system has no figure for and print what was done; Ctrl-C
    (noted, never raised inside LoadGen's or onnxruntime's callbacks) stops once the LoadGen
    run in progress ends, keeps the bricks measured so far and exits 130."""
    with kit.user_errors():
        import uuid

        from services.inference.host_slot import HostSlot, SlotWaitCancelled
        from services.workloads.bricks.measure import MeasureSettings
        from services.workloads.bricks.run import CHUNK, record_run, run_suite
        from shared.deferred_interrupt import deferred_interrupt
        from shared.settings import get_settings

        settings = MeasureSettings(queries, min_duration, threads)
        config = get_settings()
        slot = HostSlot.of(config)
        # Ctrl-C never raises inside LoadGen's or onnxruntime's callbacks (that aborts the
        # process, losing every figure): it is noted and the run stops between bricks.
        note = (
            f"Ctrl-C: stopping once the LoadGen run in progress ends (at most {CHUNK} "
            "bricks); the bricks measured so far are kept"
        )
        with deferred_interrupt(note) as interrupt:
            # No other measurement on this host disturbs the bricks, nor they it.
            try:
                with slot.measuring(f"bricks-{uuid.uuid4()}", should_stop=interrupt.is_set) as host:
                    reports = run_suite(suite, settings, stop=interrupt.is_set)
            except SlotWaitCancelled:
                _interrupted(kit, 0)  # Ctrl-C while waiting for the host: nothing measured
            threads_text = f"--threads {threads}" if threads else "the framework's default threads"
            slot_record = host.to_dict() | {"threads": threads_text}
            for report in reports:
                record_run(suite, report, slot_record)
    console = Console()
    for report in reports:  # one per framework: each has its own system key and floor
        console.print(
            f"{report.system}: {report.bricks} brick(s); measured now {report.measured_now} "
            f"in {report.seconds:.1f} s, already measured {report.reused}",
            soft_wrap=True,
        )
        console.print(f"  host: {_host_line(kit, report, slot_record)}", soft_wrap=True)
    if interrupt.pressed:
        _interrupted(kit, sum(report.measured_now for report in reports))


def _interrupted(kit: CommandKit, kept: int) -> NoReturn:
    Console(stderr=True).print(
        f"interrupted: kept the {kept} brick(s) measured so far; `bricks run` again "
        "measures the rest",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(code=kit.interrupted_exit)


def _host_line(kit: CommandKit, report: Any, slot: dict[str, Any]) -> str:
    """The run's host as `bench` prints it (BUSY, overlapped, waited), and how many of the
    LoadGen runs were busy: their bricks' figures say so in the results file."""
    load = report.load
    text = kit.host_text(
        slot | {"load": load.to_dict() if load else {}, "busy": bool(load and load.busy)}
    )
    if report.busy_runs:
        text += f"; [bold red]{report.busy_runs} LoadGen run(s) busy[/]: their bricks are marked"
    return text
