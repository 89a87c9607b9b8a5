"""GraphiQL at /graphql works offline: every file it needs comes from the API itself."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn

from services.api.app import create_app
from services.api.auth import create_token
from services.api.web import STATIC_DIR
from shared.db.session import session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, RecordingPublisher
from tests.services.api.web.test_web_static import REMOTE

SCREENSHOT = "/tmp/graphiql.png"
ASSET = re.compile(r'<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"')
TOKEN_KEY = "benchstack.token"  # where the web UI keeps the token (static/js/api.js)


def page_assets(html: str) -> list[str]:
    """Every script and stylesheet the page loads (the data: icon is not fetched)."""
    return [url for url in ASSET.findall(html) if not url.startswith("data:")]


def test_graphiql_page_loads_nothing_from_elsewhere(api: Api) -> None:
    response = api.client.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    # A script from any other origin would be refused by the browser, not only unlisted.
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assets = page_assets(response.text)
    assert {
        "/static/graphiql/vendor/react.production.min.js",
        "/static/graphiql/vendor/react-dom.production.min.js",
        "/static/graphiql/vendor/graphiql.min.js",
        "/static/graphiql/vendor/graphiql.min.css",
        "/static/graphiql/start.js",
    } <= set(assets)
    for url in assets:
        assert not re.match(r"(?:https?:)?//", url), f"{url} is fetched from elsewhere"
        asset = api.client.get(url)
        assert asset.status_code == 200, url
        kind = "javascript" if url.endswith(".js") else "css"
        assert kind in asset.headers["content-type"], url
    # Strawberry's own page loads from unpkg.com; this one names no other host at all.
    assert not REMOTE.search(response.text) and "unpkg.com" not in response.text


def test_vendored_files_keep_their_licences() -> None:
    vendor = STATIC_DIR / "graphiql" / "vendor"
    listed = (vendor / "VENDORED.txt").read_text()
    for path in vendor.iterdir():
        if path.suffix in {".js", ".css"}:
            assert path.name in listed, f"{path.name} is not listed in VENDORED.txt"
    for package in ("react", "react-dom", "graphiql"):
        licence = (vendor / f"LICENSE.{package}.txt").read_text()
        assert "MIT License" in licence and "Permission is hereby granted" in licence


@pytest.fixture
def served_api(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The API over HTTP on a free local port (a browser needs a real socket), and a token."""
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        s3_endpoint="",
        environment="test",
    )
    with session_scope(settings.effective_database_url) as session:
        token = create_token(session, user_name="graphiql-user")
    app = create_app(settings, publish=RecordingPublisher())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="graphiql-test-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the API did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", token
    server.should_exit = True
    thread.join(timeout=10)


@pytest.mark.timeout(120)
def test_graphiql_runs_a_query_with_the_internet_blocked(
    browser: Any, served_api: tuple[str, str]
) -> None:
    from playwright.sync_api import expect

    base_url, token = served_api
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=base_url)
    # Signed in as through the web UI, which stores the token where GraphiQL's page reads it.
    context.add_init_script(f"localStorage.setItem({TOKEN_KEY!r}, {token!r})")
    blocked: list[str] = []
    problems: list[str] = []

    def only_this_host(route: Any) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_this_host)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    try:
        page.goto("/graphql")
        editor = page.locator(".graphiql-query-editor .CodeMirror")
        expect(editor).to_be_visible()
        page.evaluate(
            "document.querySelector('.graphiql-query-editor .CodeMirror')"
            ".CodeMirror.setValue('{ __typename }')"
        )
        page.locator(".graphiql-execute-button").click()
        expect(page.locator(".graphiql-response")).to_contain_text('"__typename": "Query"')
        page.screenshot(path=SCREENSHOT, full_page=True)
    finally:
        context.close()
    assert not blocked, f"GraphiQL asked for files elsewhere: {blocked}"
    assert not problems, problems
