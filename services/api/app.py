"""The API: GraphQL at /graphql (GraphiQL in a browser), health, readiness, metrics, logs.

Run with ``benchstack api`` or ``uvicorn services.api.app:create_app --factory``.
"""

from __future__ import annotations

import os
from typing import Any

from cross_web import HTTPException as MalformedRequest
from fastapi import Depends, FastAPI, HTTPException, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from sqlalchemy import select
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse
from strawberry import UNSET
from strawberry.exceptions import ConnectionRejectionError
from strawberry.fastapi import GraphQLRouter
from strawberry.http import GraphQLHTTPResponse

from services.api.admission import AdmissionLimit
from services.api.auth import TokenRejected, authenticate, bearer_token
from services.api.context import ApiDeps, Context, in_thread
from services.api.faults import UNAVAILABLE_CODES, DependencyUnavailable, unavailable_dependency
from services.api.graphql.public_paths import serve_from
from services.api.observability import PUBLISHED, UNAVAILABLE, PrometheusMiddleware
from services.api.probes import CHECKING, CachedCheck, object_store_status, readiness
from services.api.repeat_refusals import RepeatRefusals
from services.api.request_limits import (
    RESPONSE_TOO_LARGE,
    RequestRefused,
    decode_bounded_json,
    read_bounded_body,
    too_large,
)
from services.api.schema import make_schema
from services.api.token_cache import Caller
from services.api.web import mount_web
from services.api.web.graphiql import graphiql_response
from services.core.stored_report import load_loadgen_report
from shared.celery_app import Payload, Publisher, make_celery, send
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import Settings, get_settings
from shared.storage import ObjectStoreUnavailable, get_if_stored
from shared.tracing import install_celery_propagation

_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def celery_publisher(settings: Settings) -> Publisher:
    app = make_celery(settings)
    # Messages carry the API's trace context, so a worker's spans join the submission's trace.
    install_celery_propagation()

    def publish(task_name: str, message: Payload, queue: str | None) -> None:
        send(app, task_name, message, queue=queue)
        PUBLISHED.labels(task_name).inc()

    return publish


def _lookup(deps: ApiDeps, token: str | None) -> Caller | TokenRejected:
    """The caller, or why their token is refused (missing, unknown, revoked, expired) in
    words the 401 carries."""
    try:
        with deps.db() as session:
            user = authenticate(session, token)
            return Caller(user.id, user.name)
    except TokenRejected as rejected:
        return rejected
    except Exception as exc:
        # Every request starts here: an outage is answered "database unavailable" (503).
        if unavailable_dependency(exc) == "database":
            raise DependencyUnavailable("database") from exc
        raise


async def _user(deps: ApiDeps, token: str | None) -> Caller | TokenRejected:
    """The token's owner: from this process's short-lived cache, else the database. Only
    accepted tokens are cached, so a revoke or an expiry takes effect within the cache's
    lifetime (``api_token_cache_seconds``)."""
    if token is not None:
        cached = deps.tokens.get(token)
        if cached is not None:
            return cached
    found = await in_thread(_lookup, deps, token)
    if isinstance(found, Caller) and token is not None:
        deps.tokens.put(token, found)
    return found


def _token_known(deps: ApiDeps, authorization: str | None) -> bool:
    """Whether this process accepted the header's token within the cache's lifetime."""
    token = bearer_token(authorization) if authorization else None
    return token is not None and deps.tokens.get(token) is not None


def _unauthorized(rejected: TokenRejected) -> HTTPException:
    # FastAPI answers {"detail": "..."}: a JSON body a client can show as it is.
    return HTTPException(401, str(rejected), headers=_UNAUTHORIZED)


_OUTAGE_CODES = frozenset(UNAVAILABLE_CODES.values())


def _names_an_outage(response: GraphQLHTTPResponse | list[GraphQLHTTPResponse]) -> bool:
    answers = response if isinstance(response, list) else [response]
    for answer in answers:
        errors: list[Any] = list(answer.get("errors") or [])
        for error in errors:
            code = (error.get("extensions") or {}).get("code")
            if code in _OUTAGE_CODES:
                return True
    return False


class BenchstackGraphQLRouter(GraphQLRouter[Context, None]):
    def __init__(self, *args: Any, settings: Settings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings

    async def parse_http_body(self, request: Any) -> Any:
        # Refused from the header, before the body is read into memory.
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.settings.max_request_bytes:
            raise too_large(int(declared), self.settings.max_request_bytes)
        if request.method == "POST" and not declared:
            # A chunked body says nothing of its size: read it up to the limit, no further.
            # (``_request``: the Starlette request behind Strawberry's adapter.)
            await read_bounded_body(request._request, self.settings.max_request_bytes)
        return await super().parse_http_body(request)

    def decode_json(self, data: str | bytes) -> object:
        """Bodies and GET variables alike: bounded in size and nesting (RequestRefused,
        which the app answers as a JSON error), never a RecursionError or an HTTP 500."""
        return decode_bounded_json(
            data,
            max_bytes=self.settings.max_request_bytes,
            max_depth=self.settings.max_json_depth,
        )

    async def run(self, request: Any, context: Any = UNSET, root_value: Any = UNSET) -> Any:
        """Strawberry answers a malformed request (no query, a query that is not a string,
        an unsupported content type) in plain text; here every error body is JSON."""
        try:
            return await super().run(request, context=context, root_value=root_value)
        except MalformedRequest as exc:
            raise RequestRefused(exc.status_code, f"request: {exc.reason}") from None

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        # An outage is the service's fault and worth retrying: 503, as for /readyz.
        if _names_an_outage(response_data):
            sub_response.status_code = 503
        response = super().create_response(response_data, sub_response)
        size = len(response.body)
        if size > self.settings.max_response_bytes:
            # The cost limit refuses what it can foresee; this bounds what it cannot.
            refused = RequestRefused(
                413,
                f"response: {size:,} bytes is above the limit of "
                f"{self.settings.max_response_bytes:,} (BENCHSTACK_MAX_RESPONSE_BYTES); ask "
                "for fewer items (first, limit) or fields",
                code=RESPONSE_TOO_LARGE,
            )
            return JSONResponse(refused.body(), status_code=refused.status)
        return response

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        """GraphiQL from this API's own files (Strawberry's page needs a CDN)."""
        return graphiql_response()

    async def on_ws_connect(self, context: Context) -> Any:
        """Browsers cannot set headers on a websocket: accept the token in connection_init."""
        if context.user_id is not None:
            return UNSET
        params = context.connection_params if isinstance(context.connection_params, dict) else {}
        raw = params.get("Authorization") or params.get("authorization")
        token = bearer_token(raw) if raw else params.get("token")
        found = await _user(context.deps, token)
        if isinstance(found, TokenRejected):
            raise ConnectionRejectionError({"message": f"401: {found}"})
        context.user_id, context.user_name = found.user_id, found.user_name
        return UNSET


def _add_errors_and_probes(app: FastAPI, deps: ApiDeps, settings: Settings) -> None:
    """Outages answered 503 and refused requests with their status; /healthz, /readyz and
    (unless turned off) /metrics."""

    @app.exception_handler(DependencyUnavailable)
    async def unavailable(request: Request, exc: DependencyUnavailable) -> JSONResponse:
        UNAVAILABLE.labels(exc.dependency).inc()
        error = {"message": f"{exc}; try again shortly", "extensions": {"code": exc.code}}
        return JSONResponse({"errors": [error]}, status_code=503)

    @app.exception_handler(RequestRefused)
    async def refused(request: Request, exc: RequestRefused) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    object_store = CachedCheck(
        lambda: object_store_status(deps),
        ttl_s=settings.s3_probe_cache_seconds,
        pending=CHECKING,
    )
    broker = make_celery(settings)
    checks = readiness(deps, broker, object_store, settings.readiness_check_timeout_seconds)
    ready = CachedCheck(
        checks,
        ttl_s=settings.readiness_cache_seconds,
        pending={"checks": "in progress"},
    )

    @app.get("/readyz")
    async def readyz(response: Response) -> dict[str, Any]:
        known = ready.known()
        checks = known if known is not None else await in_thread(ready)
        if not all(c == "ok" for c in checks.values()):
            response.status_code = 503
        return {"status": "ok" if response.status_code != 503 else "unavailable", **checks}

    if settings.expose_metrics:

        @app.get("/metrics")
        async def metrics() -> Response:
            return Response(metrics_text(), media_type=CONTENT_TYPE_LATEST)


def create_app(settings: Settings | None = None, publish: Publisher | None = None) -> FastAPI:
    settings = settings or get_settings()
    # What GraphQL serves names no folder of this deployment (public_paths.public).
    serve_from(settings)
    deps = ApiDeps(settings=settings, publish=publish or celery_publisher(settings))

    async def get_context(connection: HTTPConnection) -> Context:
        token = bearer_token(connection.headers.get("authorization"))
        found = await _user(deps, token)
        is_http = connection.scope["type"] == "http"
        address = connection.client.host if connection.client else ""
        # GET without a query serves GraphiQL; every operation over HTTP needs a token.
        wants_ide = (
            is_http
            and connection.scope.get("method") == "GET"
            and ("query" not in connection.query_params)
        )
        if isinstance(found, TokenRejected):
            if is_http and not wants_ide:
                raise _unauthorized(found)
            return Context(deps, None, None, address)
        return Context(deps, found.user_id, found.user_name, address)

    async def current_user(request: Request) -> int:
        found = await _user(deps, bearer_token(request.headers.get("authorization")))
        if isinstance(found, TokenRejected):
            raise _unauthorized(found)
        return found.user_id

    docs = settings.expose_docs
    app = FastAPI(
        title="benchstack",
        version="0.1.0",
        # None removes the route: a hidden description answers 404, like any unknown path.
        # FastAPI's /docs and /redoc pages load Swagger UI and ReDoc from a CDN (no package
        # here serves them offline): never served, so no page of this API reaches another
        # host; /openapi.json opens in any OpenAPI viewer (GraphiQL is served from our files).
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if docs else None,
    )
    app.state.deps = deps
    # The last added runs first: Prometheus times a request's wait for admission too.
    app.add_middleware(AdmissionLimit, limit=settings.api_max_requests_in_progress)
    app.add_middleware(RepeatRefusals, token_known=lambda header: _token_known(deps, header))
    app.add_middleware(PrometheusMiddleware)
    app.include_router(
        BenchstackGraphQLRouter(
            make_schema(settings),
            settings=settings,
            context_getter=get_context,
            graphql_ide="graphiql",
        ),
        prefix="/graphql",
    )

    _add_errors_and_probes(app, deps, settings)

    @app.get("/runs/{run_id}/logs/{name}")
    async def run_log(run_id: str, name: str, user_id: int = Depends(current_user)) -> Response:
        data = await in_thread(_log_bytes, deps, user_id, run_id, name)
        if data is None:
            raise HTTPException(404, f"no log {name!r} for run {run_id!r}")
        return Response(data, media_type="application/octet-stream")

    mount_web(app)
    return app


def metrics_text() -> bytes:
    """This process's metrics, or, when several API processes share a metrics folder
    (``services.stack.entry.run_api``), the sum over all of them."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return generate_latest()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return generate_latest(registry)


def _log_bytes(deps: ApiDeps, user_id: int, run_id: str, name: str) -> bytes | None:
    with deps.read_db() as session:
        row = session.execute(
            select(Run.report, Evaluation.owner_id)
            .join(Evaluation, Evaluation.id == Run.evaluation_id)
            .where(Run.id == run_id)
        ).first()
    if row is None or row.owner_id != user_id:
        return None
    try:
        return get_if_stored(deps.store, load_loadgen_report(row.report).log_keys.get(name))
    except ObjectStoreUnavailable as exc:
        raise DependencyUnavailable("object_store") from exc
