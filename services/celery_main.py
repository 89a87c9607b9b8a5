"""The Celery app workers load: ``celery -A services.celery_main worker -Q scheduler``.

Tracing is set up here, per worker process, and the trace context rides in message headers.
A worker started this way (not through services.stack.entry) gets a WorkerContext that
publishes through this app and is no agent.
"""

from __future__ import annotations

import os

from celery import signals

from shared import worker_context
from shared.celery_app import make_celery, publisher
from shared.memory_pages import prefer_ordinary_pages
from shared.settings import get_settings
from shared.tracing import install_celery_propagation, setup_tracing

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
    # It may consume the aggregator's queue, so it takes each group's next step too.
    if not worker_context.is_installed():
        from services.api.group_steps import group_steps

        worker_context.install(
            worker_context.WorkerContext(publisher(app), group_steps=group_steps())
        )
