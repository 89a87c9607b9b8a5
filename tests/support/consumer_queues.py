"""Declare a queue as its consumer does (a worker or agent starting to read it): the
queue's kombu binding in Redis. Publishing does not declare on Redis
(shared/celery_app.send), so tests of what a queue's keys become start here."""

from __future__ import annotations

from celery import Celery
from kombu import Exchange, Queue


def declare_as_consumer(app: Celery, name: str) -> None:
    with app.connection_for_write() as connection:
        Queue(name, Exchange(name, type="direct"), routing_key=name)(
            connection.default_channel
        ).declare()
