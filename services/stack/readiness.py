"""When is a started service really up: the API answers ``/readyz``; a worker announced
that it consumes (``entry.announce_ready``) and answers a Celery ping by its node name.

``benchstack up`` reports a service "started" only then, and names any that died first,
with the last lines of its log.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.stack.manager import RunningService

LOG_TAIL_LINES = 15


@dataclass(frozen=True)
class Readiness:
    name: str
    ready: bool
    detail: str  # how it answered, or why it is not up (with its log's last lines)


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.rstrip().splitlines()[-lines:])


def ready_file(ready_dir: Path, service: str) -> Path:
    return ready_dir / f"{service}.json"


def _api_ready(url: str) -> tuple[bool, str]:
    import httpx

    try:
        response = httpx.get(url + "/readyz", timeout=2.0)
    except httpx.HTTPError as exc:
        return False, f"no answer at {url}/readyz ({exc.__class__.__name__})"
    body = response.text[:300]
    return response.status_code == 200, f"/readyz {response.status_code}: {body}"


def _ping(app: Any, node: str) -> bool:
    with contextlib.suppress(Exception):  # a broker hiccup is "not yet", retried
        return bool(app.control.ping(destination=[node], timeout=1.0))
    return False


def wait_until_ready(
    services: list[RunningService],
    *,
    exit_code: Callable[[RunningService], int | None],
    ready_dir: Path,
    api_url: str,
    celery_app: Any,
    timeout_s: float = 180.0,
    on_ready: Callable[[Readiness], None] = lambda r: None,
) -> list[Readiness]:
    """Poll every service until it is ready, has died, or ``timeout_s`` passed."""
    pending = {s.name: s for s in services}
    results: list[Readiness] = []
    last_problem: dict[str, str] = {}
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        for name, service in list(pending.items()):
            code = exit_code(service)
            if code is not None:
                result = Readiness(
                    name,
                    False,
                    f"exited with code {code}; last lines of {service.log}:\n"
                    + log_tail(service.log),
                )
            elif name == "api":
                ok, detail = _api_ready(api_url)
                last_problem[name] = detail
                if not ok:
                    continue
                result = Readiness(name, True, f"answers {api_url}/readyz")
            else:
                path = ready_file(ready_dir, name)
                if not path.exists():
                    last_problem[name] = "has not announced that it consumes"
                    continue
                node = json.loads(path.read_text())["node"]
                if not _ping(celery_app, node):
                    last_problem[name] = f"{node} does not answer a Celery ping"
                    continue
                result = Readiness(name, True, f"{node} answers a Celery ping")
            del pending[name]
            results.append(result)
            on_ready(result)
        time.sleep(0.3)
    for name, service in pending.items():
        result = Readiness(
            name,
            False,
            f"not ready after {timeout_s:g} s: {last_problem.get(name, 'no answer')}; "
            f"last lines of {service.log}:\n{log_tail(service.log)}",
        )
        results.append(result)
        on_ready(result)
    return results
