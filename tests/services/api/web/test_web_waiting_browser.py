"""Why a RUNNING evaluation waits, in headless Chromium: one measurement at a time per
host (the host slot), so an evaluation claimed while another measurement holds the host
says so in the evaluations list, and the notice goes once it measures."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.settings import Settings
from tests.integration.conftest import GraphQLClient
from tests.services.api.web.test_web_charts_browser import submit
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SHOTS = Path("/tmp/web-shots")
STATE = """query($id: String!) { evaluation(id: $id) { state reason } }"""


def _slot_dir() -> Path:
    """The host slot the stack's workers use: the same default, unless overridden."""
    default = Settings.model_fields["host_slot_dir"].default
    return Path(os.environ.get("BENCHSTACK_HOST_SLOT_DIR", str(default)))


def _wait(client: GraphQLClient, evaluation_id: str, done: Callable[[dict[str, Any]], bool]) -> Any:
    deadline = time.monotonic() + 90
    while True:
        found = client(STATE, {"id": evaluation_id})["evaluation"]
        if done(found):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.3)


def test_a_run_waiting_for_the_host_says_so_in_the_list_until_it_measures(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("wanda-waits")
    client = GraphQLClient(stack.api_url, token)
    folder = _slot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # This test holds the host as another measurement would (the lock every measurement
    # on this host takes), so the evaluation's measurement must wait for it.
    with open(folder / "measure.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            evaluation_id = submit(client)
            waiting = _wait(
                client,
                evaluation_id,
                lambda e: e["state"] == "RUNNING" and "waiting for the host" in e["reason"],
            )
            assert "one measurement at a time" in waiting["reason"], waiting
            sign_in(page, token)
            page.goto("/#/")
            row = page.locator(f'tr[data-id="{evaluation_id}"]')
            expect(row.locator("[data-state-reason]")).to_contain_text("waiting for the host")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "list-waiting.png"), full_page=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    # Free again: it measures, and the notice is gone from the evaluation and the list.
    final = _wait(client, evaluation_id, lambda e: e["state"] in {"SUCCEEDED", "FAILED"})
    assert final["state"] == "SUCCEEDED", final
    assert "waiting for the host" not in final["reason"], final
    expect(row.locator("[data-state-reason]")).to_have_count(0, timeout=15_000)
