"""Worker presence: every worker process heartbeats a row in ``workers``.

Inference agents have their own rows for routing; this is the plain "is anybody
consuming this kind of work" that lets an evaluation say why it waits ("no live
preprocess worker") instead of sitting silent in PREPROCESSING.
"""

from __future__ import annotations

import logging
import os
import platform
import threading
from dataclasses import dataclass, field

from shared import runtime
from shared.db import worker_repo

log = logging.getLogger(__name__)


@dataclass
class Presence:
    kind: str
    node: str
    heartbeat_s: float = 10.0
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def worker_id(self) -> str:
        return f"{self.node}/{os.getpid()}"

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                with runtime.db() as session:
                    worker_repo.beat(session, self.worker_id)
            except Exception:  # a database blip must not kill the worker; the next beat retries
                log.warning("worker heartbeat failed", exc_info=True)

    def start(self) -> None:
        with runtime.db() as session:
            worker_repo.register(
                session,
                worker_id=self.worker_id,
                kind=self.kind,
                node=self.node,
                hostname=platform.node(),
                pid=os.getpid(),
            )
        threading.Thread(target=self._beat, name="worker-presence", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        try:
            with runtime.db() as session:
                worker_repo.mark_stopped(session, self.worker_id)
        except Exception:
            log.warning("could not mark worker %s stopped", self.worker_id, exc_info=True)
