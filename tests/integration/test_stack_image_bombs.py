"""Image bombs through the whole stack: an evaluation of a folder of them ends FAILED with
a reason that names the bound within a minute, no worker is killed by the kernel, and no
process is left behind holding memory."""

from __future__ import annotations

import time
from collections.abc import Callable

import psutil
import pytest

from tests.integration.conftest import GraphQLClient
from tests.integration.test_stack_end_to_end import EVALUATION, QUICK, submit
from tests.support.bombs import write_bombs
from tests.support.ephemeral import EphemeralStack

pytestmark = pytest.mark.integration


def stack_processes(stack: EphemeralStack) -> list[psutil.Process]:
    found = []
    for group in stack._stacks:
        for running in group.running():
            root = psutil.Process(running.pid)
            found += [root, *root.children(recursive=True)]
    return found


def test_a_folder_of_bombs_fails_with_its_reason_and_leaves_nothing_running(
    stack: EphemeralStack, client_for: Callable[[str], GraphQLClient]
) -> None:
    write_bombs(stack.data_dir / "datasets" / "bombs")
    before = len(stack_processes(stack))
    client = client_for("bomber")
    started = time.monotonic()
    created = submit(client, dataset="bombs", samples=None)
    assert created["__typename"] == "Evaluation", created
    updates = client.follow(created["id"], timeout_s=60)
    took = time.monotonic() - started
    evaluation = client(EVALUATION, {"id": created["id"]})["evaluation"]
    assert evaluation["state"] == "FAILED", (updates, stack.logs()[-4000:])
    reason = evaluation["reason"]
    assert "1x60000 pixels" in reason and "BENCHSTACK_MAX_ASPECT_RATIO" in reason, reason
    assert took < 60
    # No worker was replaced (a kernel OOM kill would have taken one) and no child holds
    # memory: the process tree is as it was, none of it above 1 GB.
    time.sleep(2)
    after = stack_processes(stack)
    assert len(after) <= before, [p.cmdline()[:3] for p in after]
    assert max(p.memory_info().rss for p in after) < 2**30
    assert "Killed" not in stack.logs() and "SIGKILL" not in stack.logs()


def test_the_next_evaluation_runs_as_usual(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    """The bombs failed only their own evaluation: the next one runs as usual."""
    client = client_for("after-bombs")
    created = submit(client, **{**QUICK, "seed": 909})
    assert client.follow(created["id"])[-1]["state"] == "SUCCEEDED"
