"""Ctrl-C during `bricks run`: noted while LoadGen measures (never raised inside its
callbacks, which aborted the process and lost every figure), the run stops between
LoadGen runs, keeps the bricks measured so far and says how many, exit 130 - in a real
subprocess that sends itself SIGINT from inside the first measurement."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from services.embedded.interrupt import EXIT_INTERRUPTED
from services.workloads.bricks.generate import generate_suite
from services.workloads.bricks.measure import system_key
from services.workloads.bricks.models import model_input
from services.workloads.bricks.results import read_results
from services.workloads.bricks.suite import list_bricks

TINY = "tests/fixtures/tiny_cnn.yaml"
PER_RUN = 2  # bricks per LoadGen run here, so that a suite takes several runs

# `benchstack bricks run` with PER_RUN bricks per LoadGen run; the first module call
# LoadGen makes while measuring sends this process SIGINT, as a person's Ctrl-C would.
DRIVER = f"""
import os, signal, sys
from services.workloads.bricks import measure, run
run.CHUNK = {PER_RUN}
original = measure.ModulesBackend.predict
fired = []
def predict(self, batch):
    if self.measuring and not fired:
        fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)
    return original(self, batch)
measure.ModulesBackend.predict = predict
sys.argv = ["benchstack", "bricks", "run", *sys.argv[1:]]
from services.cli.main import app
app()
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal delivers Ctrl-C


def test_ctrl_c_while_measuring_keeps_the_bricks_measured_and_exits_130(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    generate_suite([model_input(TINY)], 1, suite)
    bricks = list_bricks(suite)
    assert len(bricks) > PER_RUN  # so that some are left unmeasured
    env = {**os.environ, "BENCHSTACK_HOST_SLOT_DIR": str(tmp_path / "host"), "COLUMNS": "200"}
    command = [sys.executable, "-c", DRIVER, str(suite), "--queries", "5"]
    command += ["--min-duration", "0.01", "--threads", "1"]
    result = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, preexec_fn=_default_sigint
    )
    text = result.stdout + result.stderr
    assert result.returncode == EXIT_INTERRUPTED, f"exit {result.returncode}\n{text}"
    assert "Traceback" not in text and "terminate called" not in text, text
    assert "Ctrl-C: stopping once the LoadGen run in progress ends" in text
    match = re.search(r"interrupted: kept the (\d+) brick\(s\) measured so far", text)
    assert match, text
    # What it says it kept is what the results file holds: the first run's bricks.
    kept = read_results(suite, system_key(1)).bricks
    assert int(match.group(1)) == len(kept) == PER_RUN, text
    assert set(kept) <= set(bricks)
    # The run is recorded with what it measured, and the host slot is released.
    (record,) = read_results(suite, system_key(1)).runs
    assert record["measured"] == PER_RUN
    assert list((tmp_path / "host" / "active").glob("*.json")) == []
