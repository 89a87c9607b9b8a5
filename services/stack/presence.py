"""Worker presence: every worker process heartbeats a row in ``workers``.

Inference agents have their own rows for routing; this is the plain "is anybody
consuming this kind of work" that lets an evaluation say why it waits ("no live
preprocess worker") instead of sitting silent in PREPROCESSING.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from shared import runtime
from shared.db import worker_repo
from shared.heartbeat import Heartbeat


@dataclass
class Presence:
    kind: str
    node: str
    heartbeat_s: float = 10.0
    _heartbeat: Heartbeat = field(init=False)

    def __post_init__(self) -> None:
        self._heartbeat = Heartbeat(self._beat, self.heartbeat_s, "worker-presence", "worker")

    @property
    def worker_id(self) -> str:
        return f"{self.node}/{os.getpid()}"

    def _beat(self, session: Session) -> None:
        worker_repo.beat(session, self.worker_id)

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
        self._heartbeat.start()

    def stop(self) -> None:
        self._heartbeat.stop(
            lambda session: worker_repo.mark_stopped(session, self.worker_id),
            what=f"worker {self.worker_id}",
        )
