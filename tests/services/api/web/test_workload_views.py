"""The run page's workload sections are served from the workloads' folders
(Workload.web_view): listed at /workloads/views, each module at /workloads/<name>/view.js
under the page's own content security policy, with every page module it imports served."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.api.web import mount_web
from services.api.web.workload_views import VIEW_URL, VIEWS_URL


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
