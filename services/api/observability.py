"""Prometheus metrics of the API and the checks behind /healthz and /readyz."""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

REQUESTS = Counter(
    "benchstack_api_requests_total", "HTTP requests served", ["method", "route", "status"]
)
LATENCY = Histogram("benchstack_api_request_seconds", "HTTP request latency", ["method", "route"])
SUBMISSIONS = Counter("benchstack_evaluations_submitted_total", "Evaluations accepted")
REJECTIONS = Counter(
    "benchstack_evaluations_rejected_total", "Evaluations rejected, by error type", ["error"]
)
PUBLISHED = Counter("benchstack_messages_published_total", "Messages published", ["task"])
UNAVAILABLE = Counter(
    "benchstack_api_dependency_unavailable_total",
    "Requests answered 'unavailable' because a dependency did not answer, by dependency",
    ["dependency"],
)


class PrometheusMiddleware:
    """Counts and times every HTTP request by route template and status.

    A plain ASGI middleware: Starlette's BaseHTTPMiddleware re-streams every response
    through a queue, which cost about a seventh of the API's CPU under load.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # what a client gets when the app fails before it starts answering

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            # The route template, not the raw path, keeps label cardinality bounded;
            # routing writes it into the scope this middleware passed down.
            template = getattr(scope.get("route"), "path", "unmatched")
            if template == "":
                # A route at the root of an included router (GraphQL's, under /graphql)
                # has an empty template and matches exactly its prefix: a bounded label.
                template = scope.get("path", "unmatched")
            method = scope.get("method", "")
            LATENCY.labels(method, template).observe(time.perf_counter() - start)
            REQUESTS.labels(method, template, str(status)).inc()
