"""A fan-out submitted from the form lands on its comparison: one column and one curve per
matching agent (the fleet's two threaded workers), the differing agent marked."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

SCREENSHOT = "/tmp/web-shots/fan-out.png"
GROUP = "query($g: String!) { compare(groupId: $g) { done rows { evaluationId agentId } } }"


@pytest.mark.usefixtures("fleet")
def test_a_fan_out_from_the_form_opens_its_comparison(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("fay-fan-out")
    sign_in(page, token)
    page.get_by_role("link", name="New evaluation").first.click()
    resnet = page.locator('select[name="model"] option', has_text=re.compile(r"^resnet18 "))
    page.get_by_label("Model").select_option(resnet.first.get_attribute("value"))
    # The fleet's two workers (1 and 2 threads) are the only agents with a thread setting.
    fields = {"framework": "null", "duration": "0.3", "samples": "8", "constraints": "threads>=1"}
    for name, value in fields.items():
        page.fill(f'.submit-form [name="{name}"]', value)
    page.get_by_label("Scenario").select_option("single-stream")
    page.get_by_label("Fan out").check()
    page.get_by_role("button", name="Submit evaluation").click()
    expect(page).to_have_url(re.compile(r"#/compare\?group=[0-9a-f-]{36}$"))
    group_id = page.url.rsplit("=", 1)[1]

    rows = GraphQLClient(stack.api_url, token)(GROUP, {"g": group_id})["compare"]["rows"]
    agents = {row["agentId"] for row in rows}
    assert len(rows) == len(agents) == 2, rows  # one evaluation per matching agent
    # Opened at once, the page says how many are finished and fills in as they end.
    expect(page.locator("[data-pending]")).to_have_count(0, timeout=90_000)
    cdf = page.locator('[data-chart="compare-cdf"]')
    expect(cdf).to_have_attribute("data-rendered", "yes")
    # A curve per member: a member's figures may land after its state, and the page looks
    # again for them (LATE_FIGURE_POLLS in compare.js).
    expect(cdf.locator(".scatterlayer .trace")).to_have_count(len(rows), timeout=30_000)
    threads_row = page.locator('tr[data-setting="Threads"]')
    expect(threads_row).to_have_attribute("data-differs", "yes")  # 1 and 2: what sets them apart
    agent_row = page.locator('tr[data-setting="Agent"]')
    expect(agent_row).to_have_attribute("data-differs", "yes")
    for agent in agents:
        expect(agent_row).to_contain_text(agent)
    beyond = page.locator('tr[data-metric="samples_per_second"] [data-beyond]')
    expect(beyond).to_have_count(len(rows) - 1)
    page.screenshot(path=SCREENSHOT, full_page=True)
