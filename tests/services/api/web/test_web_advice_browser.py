"""The advice page and the find-peak form's duration warning in headless Chromium: a
find-peak stored through the stack shows up as a system with its QPS and verdicts, a model
without one as a system to measure with its command; the form says before submitting that
probes too short for their rate would not be judged. Screenshots go to /tmp/web-shots/."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SHOTS = Path("/tmp/web-shots")
SUBMIT_FIND_PEAK = """
mutation($input: SubmitFindPeakInput!) {
  submitFindPeak(input: $input) {
    __typename ... on FindPeak { groupId } ... on UserError { message }
  }
}
"""
FIND_PEAK = "query($id: String!) { findPeak(groupId: $id) { state verdict peakQps } }"
ADVICE = """
query($model: String!) {
  advice(model: $model, latencyBoundMs: 50, percentile: 99) {
    ... on Advice { cheapest systems { machine status qps } }
  }
}
"""


def test_the_advice_page_shows_each_system_and_the_form_warns_of_short_probes(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("ada-advice-web")
    client = GraphQLClient(stack.api_url, token)
    # A find-peak on the null backend (0.5 ms a query) whose one probe, sized from its
    # rate, LoadGen can judge: 1,000 QPS for 1.25 x 662 queries.
    evaluation = {
        "model": "resnet18",
        "framework": "null",
        "samples": 16,
        "backendOptions": {"service_time_ms": 0.5},
    }
    given = {"evaluation": evaluation, "latencyBoundMs": 50, "percentile": 99}
    given |= {"startQps": 1000, "maxProbes": 1}
    created = client(SUBMIT_FIND_PEAK, {"input": given})["submitFindPeak"]
    assert created["__typename"] == "FindPeak", created
    deadline = time.monotonic() + 90
    while client(FIND_PEAK, {"id": created["groupId"]})["findPeak"]["state"] == "searching":
        assert time.monotonic() < deadline
        time.sleep(0.5)
    advice = client(ADVICE, {"model": "resnet18"})["advice"]

    sign_in(page, token)
    page.goto("/#/advice")
    page.locator('input[name="model"]').fill("resnet18")
    page.locator('input[name="bound"]').fill("50")
    page.get_by_role("button", name="Advise").click()
    page.wait_for_url("**/#/advice?model=resnet18&bound=50&percentile=99")
    expect(page.locator("[data-conclusion]")).to_be_visible()
    rows = page.locator("table.advice-table tbody tr")
    expect(rows).to_have_count(len(advice["systems"]))
    for index, system in enumerate(advice["systems"]):  # the page keeps the API's order
        row = rows.nth(index)
        expect(row).to_have_attribute("data-machine", system["machine"])
        expect(row).to_have_attribute("data-status", system["status"])
        expect(row).to_have_attribute("data-qps", _as_js(system["qps"]))
    assert any(s["status"] == "meets the bound" for s in advice["systems"]), advice
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "advice.png"), full_page=True)

    # The form: 0.3 s probes at 100 QPS hold 30 queries, p99 needs 662.
    page.goto("/#/new")
    page.locator('select[name="workflow"]').select_option("find-peak")
    warning = page.locator("[data-duration-warning]")
    expect(warning).to_be_hidden()
    page.locator('.submit-form [name="startQps"]').fill("100")
    page.locator('.submit-form [name="duration"]').fill("0.3")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("needs 662")
    expect(warning).to_contain_text("9 s or more")
    page.screenshot(path=str(SHOTS / "find-peak-warning.png"), full_page=True)
    page.locator('.submit-form [name="duration"]').fill("")
    expect(warning).to_be_hidden()


def _as_js(value: float | None) -> str:
    """A number as JavaScript's String() writes it (shortest round-trip, no ".0")."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
