"""A database row kept fresh by a daemon thread: agents and workers alike say they are alive.

``Heartbeat.start`` calls ``beat(session)`` every ``every_s`` seconds until ``stop``, which then
records the stop with ``last(session)``. Neither a failed beat nor a failed last write ends
the process: a database blip must not kill a worker, and the next beat retries.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from shared import runtime

log = logging.getLogger(__name__)


@dataclass
class Heartbeat:
    beat: Callable[[Session], object]
    every_s: float
    # The thread's name; also what the warnings say ("<what> heartbeat failed").
    thread_name: str
    what: str
    db: runtime.SessionFactory = runtime.db
    _stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                with self.db() as session:
                    self.beat(session)
            except Exception:  # a database blip must not kill the worker; the next beat retries
                log.warning("%s heartbeat failed", self.what, exc_info=True)

    def stop(self, last: Callable[[Session], object], what: str = "") -> None:
        """No more beats; ``last(session)`` records the stop of ``what`` (default: this
        heartbeat's ``what``); a failure is logged only."""
        self._stop.set()
        try:
            with self.db() as session:
                last(session)
        except Exception:
            log.warning("could not mark %s stopped", what or self.what, exc_info=True)
