"""The one rule on the web pages, in Chromium (issue 54): a run whose report says its host
was busy shows BUSY beside its figures on the list and on its page; an Offline run shows no
latency figure anywhere on them. The API runs in-process over SQLite with the runs stored
as the aggregator keeps them (tests/support/shown_runs.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from sqlalchemy import update

from services.api.app import create_app
from shared.db.evaluations import Evaluation
from shared.db.session import session_scope
from tests.services.api.conftest import RecordingPublisher, api_with
from tests.services.api.web.conftest import watched_page
from tests.support.shown_runs import BUSY_HOST, store_run, stored_report
from tests.support.web import sign_in

pytestmark = [pytest.mark.timeout(180)]
SUBMIT = """mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) { __typename ... on Evaluation { id } } }"""


@dataclass
class Served:
    url: str
    token: str
    busy: str  # the busy run's evaluation id
    offline: str  # the Offline run's


def stored_evaluations(tmp_path: Path) -> tuple[str, str, str]:
    """A token and two finished evaluations: a busy SingleStream run and an Offline one."""
    with api_with(tmp_path) as api:
        api.add_agent()
        token = api.token("alice")
        ids = []
        for scenario, host in (("single_stream", BUSY_HOST), ("offline", None)):
            quick = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
            created = api.data(token, SUBMIT, {"input": quick})["submitEvaluation"]
            with session_scope(api.settings.effective_database_url) as session:
                store_run(session, stored_report(scenario, host=host), created["id"])
                session.execute(
                    update(Evaluation)
                    .where(Evaluation.id == created["id"])
                    .values(state="SUCCEEDED", scenario=scenario)
                )
            ids.append(created["id"])
    return token, ids[0], ids[1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The whole API (UI included) over HTTP on a free port: a browser needs a socket."""
    token, busy, offline = stored_evaluations(tmp_path)
    with api_with(tmp_path) as api:  # the same folder: what was stored above
        settings = api.settings
    app = create_app(settings, publish=RecordingPublisher())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="shown-figures-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield Served(f"http://127.0.0.1:{port}", token, busy, offline)
    server.should_exit = True
    thread.join(timeout=10)


def test_busy_beside_every_figure_and_no_offline_latency(browser: Any, served: Served) -> None:
    from playwright.sync_api import expect

    for page in watched_page(browser, served.url):
        page.route("**/favicon.ico", lambda route: route.fulfill(status=204))
        sign_in(page, served.token)
        page.goto("/#/")
        busy_row = page.locator(f'tr[data-id="{served.busy}"]')
        offline_row = page.locator(f'tr[data-id="{served.offline}"]')
        expect(busy_row.locator('[data-col="samples-per-second"] [data-busy]')).to_have_text("BUSY")
        expect(busy_row.locator('[data-col="p90"] [data-busy]')).to_have_text("BUSY")
        expect(busy_row.locator('[data-col="p90"]')).to_contain_text("8.3")
        expect(offline_row.locator('[data-col="p90"]')).to_have_text("—")
        expect(offline_row.locator('[data-col="samples-per-second"]')).to_contain_text("35.9")
        expect(offline_row.locator("[data-busy]")).to_have_count(0)

        page.goto(f"/#/evaluations/{served.busy}")
        tiles = page.locator(".figures .figure")
        expect(tiles.first).to_be_visible()
        assert tiles.count() >= 3
        for index in range(tiles.count()):
            tile = tiles.nth(index)
            if tile.locator(".figure-value").inner_text().strip() != "—":
                expect(tile.locator("[data-busy]")).to_have_text("BUSY")
        expect(page.locator('[data-role="host-busy"]')).to_contain_text("55% of 2 CPUs")
        page.screenshot(path="/tmp/shown_figures_busy.png")

        page.goto(f"/#/evaluations/{served.offline}")
        expect(page.locator('.figure[data-metric="samples_per_second"]')).to_be_visible()
        expect(page.locator('.figure[data-metric^="latency"]')).to_have_count(0)
        expect(page.locator('[data-role="offline-latency"]')).to_be_visible()
        expect(page.locator("table.metrics")).not_to_contain_text("latency_p90")
        expect(page.locator("[data-busy]")).to_have_count(0)
        page.screenshot(path="/tmp/shown_figures_offline.png", full_page=True)

        # Compare: the host row says BUSY for the busy run; the Offline one has no p90.
        page.goto(f"/#/compare?ids={served.busy},{served.offline}")
        host = page.locator('tr[data-verdict="host"] td')
        expect(host.nth(0).locator("[data-busy]")).to_have_text("BUSY")
        expect(host.nth(1)).to_have_text("not busy")
        p90 = page.locator('.figures-table tr[data-metric="latency_p90"] td.num')
        expect(p90.nth(0).locator("[data-busy]")).to_have_text("BUSY")
        expect(p90.nth(1)).to_have_text("—")
