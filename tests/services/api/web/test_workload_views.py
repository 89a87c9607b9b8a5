"""The run page's workload sections are served from the workloads' folders
(Workload.web_view): listed at /workloads/views, each module at /workloads/<name>/view.js
under the page's own content security policy, with every page module it imports served,
and each links in Chromium (every name it imports is exported where it looks)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.api.web import mount_web
from services.api.web.workload_views import VIEW_URL, VIEWS_URL
from tests.services.api.web.conftest import watched_page


def client() -> TestClient:
    app = FastAPI()
    mount_web(app)
    return TestClient(app)


def test_the_views_are_listed_by_workload() -> None:
    listed = client().get(VIEWS_URL)
    assert listed.status_code == 200
    views = listed.json()
    assert views["training"] == VIEW_URL.format(name="training")
    assert "loadgen" not in views  # the page's own LoadGen sections


def test_a_view_is_served_with_the_pages_policy_and_its_imports_are_there() -> None:
    http = client()
    response = http.get(VIEW_URL.format(name="training"))
    assert response.status_code == 200
    assert "javascript" in response.headers["content-type"]
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert "export function sections" in response.text
    imports = re.findall(r'from "(/static/[^"]+)"', response.text)
    assert imports
    for url in imports:
        assert http.get(url).status_code == 200, url


def test_a_workload_without_a_view_is_not_found() -> None:
    http = client()
    assert http.get(VIEW_URL.format(name="loadgen")).status_code == 404
    assert http.get(VIEW_URL.format(name="no-such-kind")).status_code == 404


@pytest.fixture
def served() -> Iterator[str]:
    """The UI alone over HTTP on a free local port (a browser needs a real socket)."""
    app = FastAPI()
    mount_web(app)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="workload-views-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.mark.timeout(120)
def test_every_view_links_in_chromium(browser: Any, served: str) -> None:
    for page in watched_page(browser, served):
        # A page of this origin to import from; the browser's own favicon fetch is no
        # module's (the UI's page names an inline icon).
        page.route("**/favicon.ico", lambda route: route.fulfill(status=204))
        page.goto(VIEWS_URL)
        found = page.evaluate(
            """async (url) => {
                const views = await (await fetch(url)).json();
                const kinds = {};
                for (const [name, view] of Object.entries(views)) {
                    kinds[name] = typeof (await import(view)).sections;
                }
                return kinds;
            }""",
            VIEWS_URL,
        )
        assert found and set(found.values()) == {"function"}, found
        assert "training" in found
