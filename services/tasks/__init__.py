"""The Celery tasks: the edge where a broker message becomes a call into a stage.

One module per queue (``scheduler``, ``preprocess``, ``inference``, ``aggregator``); each
validates its message, calls the stage's functions and publishes the next message through
the worker's context (shared/worker_context.py). ``shared/celery_app.py`` lists them.
"""
