"""A stored member's group takes its next step through what the aggregator's launcher
handed it (WorkerContext.group_steps), so the aggregator imports nothing from the API."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from services.api.group_steps import group_steps
from services.stack.entry import _group_steps
from services.tasks.aggregator import _continue_group
from shared import worker_context
from shared.db.evaluations import Evaluation


def _member(kind: str) -> Evaluation:
    return Evaluation(id=str(uuid.uuid4()), group_id=str(uuid.uuid4()), group_info={"kind": kind})


def test_the_step_of_the_members_group_kind_runs_and_no_other(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    taken: list[tuple[str, Any]] = []

    def step(session: Any, _settings: Any, publish: Any, evaluation: Evaluation) -> str:
        taken.append((evaluation.id, publish))
        return "next member(s) submitted"

    def publish(*_: Any) -> None:
        return None

    searched, swept = _member("find-peak"), _member("sweep")
    context = worker_context.WorkerContext(publish, group_steps={"find-peak": step})
    with caplog.at_level("INFO", logger="services.tasks.aggregator"):
        _continue_group(context, None, searched)  # type: ignore[arg-type]
        _continue_group(context, None, swept)  # type: ignore[arg-type]
    assert taken == [(searched.id, publish)]
    assert f"find-peak {searched.group_id}: next member(s) submitted" in caplog.text


def test_only_the_aggregator_is_handed_the_api_s_group_steps() -> None:
    assert set(group_steps()) == {"find-peak", "training-scaling"}
    assert set(_group_steps("aggregator")) == {"find-peak", "training-scaling"}
    assert _group_steps("preprocess") == {} and _group_steps("inference") == {}


def test_a_directly_started_worker_imports_the_api_only_at_its_first_group_lookup() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from services.celery_main import _ApiGroupSteps\n"
        "steps = _ApiGroupSteps()\n"
        "print('services.api.group_steps' in sys.modules)\n"
        "print(sorted(steps))\n"
        "print('services.api.group_steps' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split("\n")
    assert out[:3] == ["False", "['find-peak', 'training-scaling']", "True"], out
