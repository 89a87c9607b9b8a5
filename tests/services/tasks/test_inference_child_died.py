"""A measurement process that dies without answering (kill -9, a crash) gets the bounded
retry a killed worker gets: its run is sent again, counted in ``dispatches``, and the
evaluation fails only past ``max_dispatches``, with the reason. The pipeline's tasks run
in process over the embedded stores (tests/support/pipeline.py); the measurement runs in
its real child process, which kills itself."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.tasks import aggregator as aggregator_tasks
from services.tasks import inference as inference_tasks
from shared import queues, runtime
from tests.support.pipeline import Outbox, evaluation_row, outbox_fixture, submit_quick, to_running


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    monkeypatch.setenv("BENCHSTACK_HOST_SLOT_DIR", str(data_dir / "host"))
    yield from outbox_fixture(data_dir, monkeypatch)


def killed(*_: Any) -> dict[str, str]:
    """The measurement, killed as the kernel's OOM killer or kill -9 would (in the child)."""
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def test_a_killed_measurement_is_measured_again_and_succeeds(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=31)
    run = to_running(outbox, evaluation_id)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference_tasks, "measure", killed)
        inference_tasks.run_inference(run)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.dispatches, row.claimed_at) == ("RUNNING", 1, None)
    assert row.reason == (
        "inference: the measurement process was killed by SIGKILL (kill -9, or the kernel's "
        "out-of-memory killer); measured again (dispatch 1 of 3)"
    )
    ((again, queue),) = outbox.take(queues.RUN_INFERENCE)
    assert (again, queue) == (run, "inference.null.cpu")
    inference_tasks.run_inference(again)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    assert completed["log_prefix"] == f"runs/{run['run_id']}/attempt-2"
    aggregator_tasks.run_completed(completed)
    assert (evaluation_row(evaluation_id).state, evaluation_row(evaluation_id).reason) == (
        "SUCCEEDED",
        "",
    )


def test_a_measurement_killed_every_time_fails_past_max_dispatches(outbox: Outbox) -> None:
    evaluation_id = submit_quick(seed=32)
    run = to_running(outbox, evaluation_id)
    limit = runtime.settings().max_dispatches
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inference_tasks, "measure", killed)
        for dispatch in range(1, limit + 1):
            inference_tasks.run_inference(run)
            assert evaluation_row(evaluation_id).dispatches == dispatch
            ((run, _),) = outbox.take(queues.RUN_INFERENCE)
        inference_tasks.run_inference(run)
    row = evaluation_row(evaluation_id)
    assert (row.state, row.attempt) == ("FAILED", limit + 1)
    assert row.reason.startswith("inference: the measurement process was killed by SIGKILL")
    assert row.reason.endswith(
        f"; dispatched again {limit} times without progress, so it is failed rather than looped"
    )
    assert outbox.sent == []
