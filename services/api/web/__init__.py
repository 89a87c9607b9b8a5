"""The web UI: a static single-page app served by the API itself, at ``/`` and ``/static``.

No build step and nothing fetched at run time: plain HTML, CSS and JS modules shipped as
package data, talking to /graphql (HTTP for queries, graphql-transport-ws for updates).
The charts use plotly.js as the ``plotly`` Python package ships it (PLOTLY_URL).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Scope

from services.api.web.compressed import gzip_response
from services.api.web.workload_views import mount_workload_views

WEB_DIR = Path(__file__).parent
STATIC_DIR = WEB_DIR / "static"
PLOTLY_URL = "/static/vendor/plotly.min.js"

# Everything comes from this origin: a stray CDN link or inline script fails loudly in
# development instead of silently needing a network the deployments may not have.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


POLICY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
}
# The app's own scripts and styles keep their names across deploys: always revalidated
# (a 304 while unchanged), so a deploy is seen at once.
REVALIDATE = {"Cache-Control": "no-cache"}


class _StaticFiles(StaticFiles):
    """StaticFiles with the same policy as the page, so assets carry it too, compressed
    for a browser that takes gzip."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if isinstance(response, FileResponse) and response.status_code == 200:
            compressed = gzip_response(
                Path(response.path), Headers(scope=scope), {**POLICY_HEADERS, **REVALIDATE}
            )
            if compressed is not None:
                return compressed
        response.headers.update({**POLICY_HEADERS, **REVALIDATE})
        return response


def mount_web(app: FastAPI) -> None:
    """Serve the UI: ``/`` is the page, ``/static/...`` its scripts and styles."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(
            WEB_DIR / "index.html",
            media_type="text/html",
            headers={
                "Content-Security-Policy": CONTENT_SECURITY_POLICY,
                "X-Content-Type-Options": "nosniff",
                # The page is tiny; always revalidate so a deploy is seen at once.
                "Cache-Control": "no-cache",
            },
        )

    @app.get(PLOTLY_URL, include_in_schema=False)
    async def plotly_js(request: Request) -> Response:
        # Registered before the /static mount, which would otherwise answer 404 for it.
        # 4.8 MB (1.4 MB compressed): cached for a day, revalidated by its ETag after that.
        headers = {**POLICY_HEADERS, "Cache-Control": "public, max-age=86400"}
        compressed = gzip_response(plotly_bundle(), request.headers, headers)
        if compressed is not None:
            return compressed
        return FileResponse(plotly_bundle(), media_type="text/javascript", headers=headers)

    # Each workload's run-page section, from its own folder (Workload.web_view).
    mount_workload_views(app, POLICY_HEADERS)
    app.mount("/static", _StaticFiles(directory=STATIC_DIR), name="web-static")


def plotly_bundle() -> Path:
    """plotly.min.js inside the installed ``plotly`` package: one copy, upgraded with it,
    never a second one checked into this repository."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
