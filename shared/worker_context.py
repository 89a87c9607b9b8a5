"""What a worker process is given at start-up: its settings, object store and database
sessions, how to publish, which agent it is, and the next step of each group kind whose
members are submitted one after another.

The launcher (``services.stack.entry.run_worker``, or ``services.celery_main`` when Celery
is started directly) installs one ``WorkerContext`` before the worker consumes; each task
reads it once through ``current()`` and passes what it needs down as arguments, so no task
module reads a module-level publisher, agent id, settings, store or database. Tests install
their own (a publisher that records), the way the API is handed a publisher by
``create_app``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from shared.celery_app import PublishBatch, Publisher
from shared.runtime import Resources, process_resources

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from shared.db.evaluations import Evaluation
    from shared.settings import Settings

# After a group member's run is stored, the group's next step (a find-peak's next probe, a
# training scaling's next gang): what it did, in words for the log, or None when nothing
# was due. The launcher hands the aggregator these (services/api/group_steps.py), so the
# aggregator, a stage, imports nothing from the API above it.
GroupStep = Callable[["Session", "Settings", Publisher, "Evaluation"], "str | None"]


@dataclass(frozen=True)
class AgentIdentity:
    """The inference agent this worker is: its agent id per framework it serves, and the
    settings every run it measures applies (e.g. ``{"intra_op_threads": 2}``). Empty in
    the other workers."""

    ids: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def agent_id(self, framework: str) -> str:
        """The agent id for ``framework``; "" when this worker is no agent for it."""
        return self.ids.get(framework, "")


@dataclass(frozen=True)
class WorkerContext:
    publish: Publisher
    agent: AgentIdentity = field(default_factory=AgentIdentity)
    # Group kind (``Evaluation.group_info["kind"]``) -> its next step; empty in workers
    # that store no runs.
    group_steps: Mapping[str, GroupStep] = field(default_factory=lambda: MappingProxyType({}))
    # Settings, store and database: the launcher's process handles unless it gives others.
    resources: Resources = field(default_factory=process_resources)
    # How to publish many messages in one round trip (shared/celery_app.batch_publisher);
    # None: one by one through ``publish`` (tests' recording publishers).
    publish_batch: PublishBatch | None = None

    def batch(self) -> AbstractContextManager[Publisher]:
        """A publisher whose messages reach the broker together when the block ends."""
        return self.publish_batch() if self.publish_batch is not None else nullcontext(self.publish)


class NoWorkerContext(RuntimeError):
    """A task ran in a process whose launcher installed no WorkerContext."""


_installed: WorkerContext | None = None


def install(context: WorkerContext) -> WorkerContext | None:
    """Make ``context`` this process's; returns the one it replaces (tests restore it)."""
    global _installed
    previous, _installed = _installed, context
    return previous


def uninstall(previous: WorkerContext | None = None) -> None:
    """Put back what ``install`` returned (None: no context)."""
    global _installed
    _installed = previous


def is_installed() -> bool:
    return _installed is not None


def current() -> WorkerContext:
    if _installed is None:
        raise NoWorkerContext(
            "no worker context: start workers with `benchstack worker KIND` "
            "(services.stack.entry) or `celery -A services.celery_main worker`"
        )
    return _installed
