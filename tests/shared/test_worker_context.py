"""The worker context: installed once by the launcher, read by every task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.core.messages import Message
from shared import worker_context
from shared.worker_context import AgentIdentity, NoWorkerContext, WorkerContext


def _drop(_task: str, _message: Message, _queue: str | None) -> None:
    pass


@pytest.fixture
def no_context() -> Iterator[None]:
    previous = worker_context.install(WorkerContext(_drop))
    worker_context.uninstall()
    yield
    worker_context.uninstall(previous)


@pytest.mark.usefixtures("no_context")
def test_a_task_without_a_context_is_told_how_to_start_its_worker() -> None:
    assert not worker_context.is_installed()
    with pytest.raises(NoWorkerContext, match="benchstack worker KIND"):
        worker_context.current()


@pytest.mark.usefixtures("no_context")
def test_the_installed_context_is_current_until_the_previous_one_is_put_back() -> None:
    first = WorkerContext(_drop, AgentIdentity(ids={"null": "host/inference.null.cpu/1"}))
    assert worker_context.install(first) is None
    second = WorkerContext(_drop)
    assert worker_context.install(second) is first
    assert worker_context.current() is second
    worker_context.uninstall(first)
    assert worker_context.current().agent.agent_id("null") == "host/inference.null.cpu/1"


def test_a_worker_that_is_no_agent_for_a_framework_has_no_agent_id_for_it() -> None:
    agent = AgentIdentity(
        ids={"torch": "h/inference.torch.cpu/1"}, settings={"intra_op_threads": 2}
    )
    assert agent.agent_id("torch") == "h/inference.torch.cpu/1"
    assert agent.agent_id("onnxruntime") == ""
    assert WorkerContext(_drop).agent.ids == {}
