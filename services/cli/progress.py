"""Progress on the terminal: an embedded benchmark's stages and LoadGen phases
(``ProgressBars``, used by bench, sweep, find-peak and rerun), and a stack evaluation's
place in its state machine (``evaluation_progress``, used by submit)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from services.cli.render import loadgen_progress_text
from services.embedded import request as embedded
from services.inference.loadgen.progress import RunProgress

# Percent done on entering each state, for one bar across a whole stack evaluation;
# PREPROCESSING adds up to 50 more as its shards become ready. A final state is 100.
STAGE_PERCENT = {"QUEUED": 0, "PREPROCESSING": 10, "RUNNING": 60, "AGGREGATING": 90}


@dataclass(frozen=True)
class EvaluationProgress:
    state: str
    percent: int
    # Shards ready, or why it is not moving (rich markup, escaped).
    detail: str


def evaluation_progress(evaluation: dict[str, Any]) -> EvaluationProgress:
    """Where an evaluation (as the API returns it: state, shardsReady, shardsTotal,
    reason) stands."""
    state = evaluation["state"]
    percent = STAGE_PERCENT.get(state, 100)
    detail = ""
    if state == "PREPROCESSING" and evaluation.get("shardsTotal"):
        share = evaluation["shardsReady"] / evaluation["shardsTotal"]
        percent += int(50 * share)
        detail = f"shards {evaluation['shardsReady']}/{evaluation['shardsTotal']}"
    if evaluation.get("reason"):
        # Why it is not moving (e.g. "no live preprocess worker"), said as it happens.
        detail = f"[yellow]{escape(evaluation['reason'])}[/]"
    return EvaluationProgress(state, percent, detail)


class ProgressBars:
    """Progress on stderr: preprocessing, and each LoadGen phase as it runs.

    On a terminal, bars. Otherwise (piped, captured, CI logs) a line when calibration or
    measurement starts and one every PLAIN_EVERY_S, so a long run is never silent.
    """

    PLAIN_EVERY_S = 10.0

    def __init__(self, console: Console) -> None:
        self.console = console
        self.plain = not console.is_terminal
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            # Bars are for people; piped or captured output gets plain lines instead.
            disable=self.plain,
        )
        self.stage: TaskID | None = None
        self.prep: TaskID | None = None
        # LoadGen reports from its own thread (the runner's poller), the stages from this one.
        self._lock = threading.Lock()
        self.phase: str | None = None
        self.phase_task: TaskID | None = None
        self.last_report: RunProgress | None = None
        self._last_line = 0.0
        self._prep_done = 0
        self._prep_total = 0

    def __enter__(self) -> embedded.Progress:
        self.progress.start()
        return embedded.Progress(
            on_stage=self._stage,
            on_preprocess_start=self._prep_start,
            on_preprocess_advance=self._prep_advance,
            on_run_start=self._run_start,
            on_loadgen=self._loadgen,
        )

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._end_phase(finished=False)  # maybe cut short by an error: no "done" line
        if self.stage is not None:
            self.progress.update(self.stage, completed=1, total=1)
        self.progress.stop()

    def _stage(self, name: str) -> None:
        with self._lock:
            self._end_phase()
        if self.stage is not None:
            self.progress.update(self.stage, completed=1, total=1)
        self.stage = self.progress.add_task(name, total=None, detail="")

    def _prep_start(self, total: int) -> None:
        self._prep_done, self._prep_total = 0, total
        self.prep = self.progress.add_task("preprocessing", total=total, detail="")

    def _prep_advance(self, n: int) -> None:
        if self.prep is not None:
            self._prep_done += n
            self.progress.update(
                self.prep,
                completed=self._prep_done,
                detail=f"{self._prep_done}/{self._prep_total} files",
            )

    def _run_start(self, expected_s: float) -> None:
        if self.stage is not None:
            self.progress.update(
                self.stage, description=f"running LoadGen (at least {expected_s:g} s)"
            )

    def _loadgen(self, report: RunProgress) -> None:
        with self._lock:
            if report.phase != self.phase:
                self._end_phase()
                self.phase = report.phase
                self.phase_task = self.progress.add_task(
                    f"  {report.phase}", total=None if report.fraction is None else 1, detail=""
                )
                if report.phase != "warming up":  # seconds at most; its errors stay alone
                    self._say(report)
            assert self.phase_task is not None
            self.progress.update(
                self.phase_task,
                completed=report.fraction or 0,
                detail=loadgen_progress_text(report),
            )
            self.last_report = report
            due = time.monotonic() - self._last_line >= self.PLAIN_EVERY_S
            if due and report.phase != "warming up":
                self._say(report)

    def _end_phase(self, *, finished: bool = True) -> None:
        """The finished phase's bar stays, full; the next phase gets a bar of its own."""
        if self.phase_task is not None:
            if self.phase == "warming up":
                # Untimed and brief: its bar would only lengthen a sweep's screen.
                self.progress.remove_task(self.phase_task)
            else:
                self.progress.update(self.phase_task, completed=1, total=1)
            report = self.last_report
            if finished and self.plain and report is not None and self.phase != "warming up":
                self.console.print(
                    f"{self.phase} done: {loadgen_progress_text(report)}", highlight=False
                )
        self.phase, self.phase_task = None, None

    def _say(self, report: RunProgress) -> None:
        if self.plain:
            self.console.print(f"{report.phase}: {loadgen_progress_text(report)}", highlight=False)
            self._last_line = time.monotonic()
