"""The Celery app workers load: ``celery -A services.celery_main worker -Q scheduler``.

Tracing is set up here, per worker process, and the trace context rides in message headers.
A worker started this way (not through services.stack.entry) gets a WorkerContext that
publishes through this app and is no agent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from functools import cached_property

from celery import signals

from shared import worker_context
from shared.celery_app import batch_publisher, make_celery, publisher
from shared.memory_pages import prefer_ordinary_pages
from shared.settings import get_settings
from shared.tracing import install_celery_propagation, setup_tracing
from shared.worker_context import GroupStep

# A worker writes whole shards of tensors at a time: without numpy's huge-page advice,
# several times faster where the kernel compacts memory for it (shared/memory_pages.py).
prefer_ordinary_pages()
app = make_celery(get_settings(), include_tasks=True)
install_celery_propagation()


@signals.worker_process_init.connect(weak=False)
def _per_child(**_: object) -> None:
    # A forked child must not share the parent's pooled database connections.
    from shared import runtime

    runtime.reset()


@signals.worker_init.connect(weak=False)
def _tracing(**_: object) -> None:
    setup_tracing(os.environ.get("BENCHSTACK_SERVICE", "benchstack-worker"), get_settings())


@signals.worker_init.connect(weak=False)
def _context(**_: object) -> None:
    # `celery -A services.celery_main worker` directly: publish through this app, as no
    # agent. services.stack.entry installs its own (with the agent) before it gets here.
    # It may consume the aggregator's queue, so it takes each group's next step too,
    # imported from the API only when the first group member is stored.
    if not worker_context.is_installed():
        worker_context.install(
            worker_context.WorkerContext(
                publisher(app), group_steps=_ApiGroupSteps(), publish_batch=batch_publisher(app)
            )
        )


class _ApiGroupSteps(Mapping[str, GroupStep]):
    """services/api/group_steps.group_steps(), imported at its first lookup: a worker
    started directly that never stores a group member never loads the API."""

    @cached_property
    def _steps(self) -> dict[str, GroupStep]:
        from services.api.group_steps import group_steps

        return group_steps()

    def __getitem__(self, kind: str) -> GroupStep:
        return self._steps[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)
