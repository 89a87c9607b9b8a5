"""`up` tells the truth: a service that dies before it answers is named with its log."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from services.stack.manager import ServiceSpec, Stack
from services.stack.readiness import Readiness, wait_until_ready


def broker_without_workers() -> Any:
    """A real Celery app on a Redis database no worker listens to: pings go unanswered."""
    from shared.celery_app import make_celery
    from shared.settings import Settings

    return make_celery(Settings(broker_url="redis://127.0.0.1:6379/14"))


def test_a_worker_that_dies_is_named_with_its_last_log_lines(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    dying = [sys.executable, "-c", "import sys; print('NameError: usable_cpus'); sys.exit(3)"]
    started = stack.start([ServiceSpec("preprocess", dying)])
    seen: list[Readiness] = []
    results = wait_until_ready(
        started,
        exit_code=stack.exit_code,
        ready_dir=stack.ready_dir,
        api_url="http://127.0.0.1:9",
        celery_app=broker_without_workers(),
        timeout_s=20,
        on_ready=seen.append,
    )
    (result,) = results
    assert result.name == "preprocess" and not result.ready
    assert "exited with code 3" in result.detail and "NameError: usable_cpus" in result.detail
    assert seen == results
    assert [s.name for s in stack.dead()] == ["preprocess"]
    stack.stop()


def test_a_worker_that_announces_but_never_answers_a_ping_is_not_up(tmp_path: Path) -> None:
    stack = Stack(tmp_path)
    # Announces itself the way entry.announce_ready does, then idles without a broker.
    announce = (
        "import json, os, time; "
        "open(os.environ['BENCHSTACK_READY_FILE'], 'w').write(json.dumps({'node': 'x@h'})); "
        "time.sleep(30)"
    )
    started = stack.start([ServiceSpec("scheduler", [sys.executable, "-c", announce])])
    (result,) = wait_until_ready(
        started,
        exit_code=stack.exit_code,
        ready_dir=stack.ready_dir,
        api_url="http://127.0.0.1:9",
        celery_app=broker_without_workers(),
        timeout_s=2,
    )
    assert not result.ready
    assert "x@h does not answer a Celery ping" in result.detail
    stack.stop(grace_s=2)
