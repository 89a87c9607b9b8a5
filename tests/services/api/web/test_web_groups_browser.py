"""Groups as pages of their own in headless Chromium: from the evaluations list a user
reaches a sweep's curve, a find-peak's chart and a repeats page by clicking, a member's
page links to its group, and a whole group is cancelled from its page. Screenshots go to
/tmp/web-shots/."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SHOTS = Path("/tmp/web-shots")
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
EVALUATION = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "samples": 16,
    "settings": {"minDurationS": 0.2, "targetQps": 2000},
    "backendOptions": {"service_time_ms": 0.25},
}
SUBMIT = {
    "sweep": """mutation($input: SubmitSweepInput!) { submitSweep(input: $input) {
      __typename ... on Sweep { groupId } ... on UserError { message } } }""",
    "find-peak": """mutation($input: SubmitFindPeakInput!) { submitFindPeak(input: $input) {
      __typename ... on FindPeak { groupId } ... on UserError { message } } }""",
    "repeats": """mutation($input: SubmitRepeatsInput!) { submitRepeats(input: $input) {
      __typename ... on Repeats { groupId } ... on UserError { message } } }""",
}
MEMBERS = """query { evaluations(first: 100) { items { id state groupId groupKind } } }"""
PAGES = {"sweep": "sweeps", "find-peak": "find-peak", "repeats": "repeats"}


def _submit(client: GraphQLClient, kind: str, given: dict[str, Any]) -> str:
    answer = next(iter(client(SUBMIT[kind], {"input": given}).values()))
    assert "groupId" in answer, answer
    return str(answer["groupId"])


def _members(client: GraphQLClient, group_id: str) -> list[dict[str, Any]]:
    items = client(MEMBERS)["evaluations"]["items"]
    return [e for e in items if e["groupId"] == group_id]


def _wait_final(client: GraphQLClient, group_ids: list[str]) -> None:
    deadline = time.monotonic() + 150
    while any(
        e["state"] not in FINAL
        for group_id in group_ids
        for e in _members(client, group_id) or [{"state": "none yet"}]
    ):
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_every_group_is_reached_from_the_list_and_from_its_members(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("gia-groups-web")
    client = GraphQLClient(stack.api_url, token)
    groups = {
        "sweep": _submit(
            client, "sweep", {"evaluation": EVALUATION, "parameter": "batch_size", "values": [1, 2]}
        ),
        "find-peak": _submit(
            client,
            "find-peak",
            {
                "evaluation": {k: v for k, v in EVALUATION.items() if k != "scenario"},
                "latencyBoundMs": 50,
                "startQps": 1000,
                "maxProbes": 1,
            },
        ),
        "repeats": _submit(client, "repeats", {"evaluation": EVALUATION, "count": 2}),
    }
    _wait_final(client, list(groups.values()))

    sign_in(page, token)
    for kind, group_id in groups.items():
        page.goto("/#/")
        link = page.locator(f'a[data-group-link="{kind}"][href$="{group_id}"]').first
        expect(link).to_be_visible()
        link.click()
        page.wait_for_url(f"**/#/{PAGES[kind]}/{group_id}")
        # And from one of its members' pages.
        member = _members(client, group_id)[0]
        page.goto(f"/#/evaluations/{member['id']}")
        back = page.locator(f'[data-member-of] a[data-group-link="{kind}"]')
        expect(back).to_have_attribute("href", f"#/{PAGES[kind]}/{group_id}")
    page.goto("/#/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "list-groups.png"), full_page=True)


def test_a_whole_group_is_cancelled_from_its_page(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("gia-cancel-web")
    client = GraphQLClient(stack.api_url, token)
    slow = {**EVALUATION, "settings": {"minDurationS": 3.0, "targetQps": 2000}, "seed": 917}
    group_id = _submit(
        client, "sweep", {"evaluation": slow, "parameter": "batch_size", "values": [1, 2, 3, 4, 5]}
    )
    sign_in(page, token)
    page.goto(f"/#/sweeps/{group_id}")
    page.locator(f'button[data-cancel-group="{group_id}"]').click()
    said = page.locator("[data-group-cancelled]")
    expect(said).to_contain_text("cancelled")
    started = time.monotonic()
    _wait_final(client, [group_id])
    states = [e["state"] for e in _members(client, group_id)]
    assert len(states) == 5 and states.count("CANCELLED") >= 4, states
    assert time.monotonic() - started < 5 * 3.0
    page.screenshot(path=str(SHOTS / "group-cancelled.png"), full_page=True)
