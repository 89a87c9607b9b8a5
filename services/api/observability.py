"""Prometheus metrics of the API and the checks behind /healthz and /readyz."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from prometheus_client import Counter, Histogram
from starlette.requests import Request
from starlette.responses import Response

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


async def prometheus_middleware(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    # The route template, not the raw path, keeps label cardinality bounded.
    route = request.scope.get("route")
    start = time.perf_counter()
    response = await call_next(request)
    template = getattr(request.scope.get("route", route), "path", "unmatched")
    if template == "":
        # A route at the root of an included router (GraphQL's, under /graphql) has an
        # empty template and matches exactly its prefix: the path is as bounded a label.
        template = request.url.path
    LATENCY.labels(request.method, template).observe(time.perf_counter() - start)
    REQUESTS.labels(request.method, template, str(response.status_code)).inc()
    return response
