"""GraphiQL at GET /graphql, from files this API serves: it works with no internet access.

Strawberry's built-in page loads React and GraphiQL from a CDN, so it is blank on a machine
without internet. This page names the copies vendored under /static/graphiql/vendor
(their versions and licences: VENDORED.txt there) and a small start script beside them.
"""

from __future__ import annotations

from starlette.responses import HTMLResponse

from services.api.web import WEB_DIR

GRAPHIQL_PAGE = WEB_DIR / "graphiql.html"

# The web UI's policy, widened only where GraphiQL needs it: it injects its styles at run
# time (emotion) and embeds its fonts as data: URLs. Scripts still come from this origin only.
GRAPHIQL_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
    "font-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def graphiql_response() -> HTMLResponse:
    """The GraphiQL page, with a policy that would block any script from elsewhere."""
    return HTMLResponse(
        GRAPHIQL_PAGE.read_text(encoding="utf-8"),
        headers={
            "Content-Security-Policy": GRAPHIQL_CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        },
    )
