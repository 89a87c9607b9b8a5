"""The history page in headless Chromium over the API served here: the twelve stored runs
whose thread count drops at the seventh show as one series, the change point at that run
naming the change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.services.api.web.conftest import watched_page
from tests.support.history_rows import store_series
from tests.support.served_api import served_api
from tests.support.web import sign_in

pytestmark = pytest.mark.timeout(180)


def test_the_history_page_shows_the_series_and_its_change_point(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with served_api(tmp_path) as (api, url):
        token = api.token("ada")
        ids = [run for run, _ in store_series(api.settings, "ada")]
        for page in watched_page(browser, url):
            sign_in(page, token)
            page.goto("/#/history?model=tiny-cnn")
            card = page.locator("section[data-system]")
            expect(card).to_have_count(1)
            expect(card.locator("tbody tr")).to_have_count(12)
            change = card.locator(f"[data-change-point='{ids[6]}']")
            expect(change).to_contain_text("Changed: threads: 2 -> 1")
            expect(change).to_contain_text("worse")
            row = card.locator(f"tr[data-run='{ids[6]}']")
            expect(row).to_contain_text("CHANGE")
            expect(row).to_contain_text("threads: 2 -> 1")
            # The form keeps the query in the URL.
            page.get_by_label("Figure").select_option("p99")
            page.get_by_role("button", name="Show").click()
            expect(page).to_have_url(f"{url}/#/history?model=tiny-cnn&figure=p99")
