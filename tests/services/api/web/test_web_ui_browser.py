"""The web UI in headless Chromium against the throw-away stack: token, submit, live
updates to SUCCEEDED, typed errors beside their field, per-user listing, cancel."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCREENSHOT = "/tmp/webui.png"
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) { __typename ... on Evaluation { id } }
}
"""


def fill_form(page: Any, **values: str) -> None:
    for name, value in values.items():
        page.fill(f'.submit-form [name="{name}"]', value)


def test_submit_follow_list_and_errors(
    browser: Any,
    page: Any,
    stack: EphemeralStack,
    make_token: Callable[[str], str],
    client_for: Callable[[str], GraphQLClient],
) -> None:
    from playwright.sync_api import expect

    # Someone else's evaluation, which alice must never see.
    other = client_for("mallory-web")(
        SUBMIT,
        {
            "input": {
                "model": "resnet18",
                "framework": "null",
                "samples": 8,
                "settings": {"minDurationS": 0.1},
            }
        },
    )["submitEvaluation"]

    page.goto("/")
    expect(page.get_by_role("status").filter(has_text="No token")).to_be_visible()
    page.get_by_label("API token").fill(make_token("alice-web"))
    page.get_by_role("button", name="Save token").click()
    expect(page.locator("#token-status")).to_have_text("Token saved")

    # A good submission, followed live until it succeeds.
    page.get_by_role("link", name="New evaluation").first.click()
    expect(page.get_by_label("Model")).to_contain_text("resnet18")
    resnet = page.locator('select[name="model"] option', has_text=re.compile(r"^resnet18 "))
    page.get_by_label("Model").select_option(resnet.first.get_attribute("value"))
    fill_form(page, framework="null", batchSize="1", duration="0.3", targetQps="2000", samples="16")
    page.get_by_label("Scenario").select_option("offline")
    page.get_by_label("Preprocessing").select_option("fast")
    page.get_by_role("button", name="Submit evaluation").click()
    expect(page).to_have_url(re.compile(r"#/evaluations/[0-9a-f-]{36}$"))
    evaluation_id = page.url.rsplit("/", 1)[1]
    expect(page.locator('.status-state[data-state="SUCCEEDED"]')).to_be_visible(timeout=40_000)
    overview = page.locator("dl").filter(has_text="Preprocessing")
    expect(overview.locator("dd").filter(has_text=re.compile(r"^fast$"))).to_have_count(1)
    samples_per_second = page.locator('[data-metric="samples_per_second"] .figure-value')
    expect(samples_per_second).to_have_text(re.compile(r"^[\d,]+(\.\d)?$"))
    assert float(samples_per_second.inner_text().replace(",", "")) > 0
    expect(page.get_by_role("heading", name="Validity and stability")).to_be_visible()
    expect(page.get_by_role("link", name="mlperf_log_summary.txt")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel evaluation")).to_be_disabled()
    page.screenshot(path=SCREENSHOT, full_page=True)

    # Typed errors, shown beside the field they name.
    page.get_by_role("link", name="New evaluation").first.click()
    expect(page.get_by_label("Model")).to_contain_text("resnet18")
    fill_form(page, framework="null", batchSize="-2")
    page.get_by_role("button", name="Submit evaluation").click()
    batch_error = page.locator('[data-field="batchSize"] .field-error')
    expect(batch_error).to_contain_text("batchSize: must be at least 1")
    expect(page.locator(".form-errors")).to_contain_text("InvalidInput in field “batchSize”")
    expect(page.get_by_label("Batch size")).to_have_attribute("aria-invalid", "true")
    fill_form(page, framework="onnxruntime", batchSize="1")
    page.get_by_role("button", name="Submit evaluation").click()
    expect(page.locator('[data-field="framework"] .field-error')).to_contain_text("framework")
    expect(page.locator(".form-errors")).to_contain_text("NoMatchingAgent")
    expect(batch_error).to_be_hidden()

    # The list: alice's evaluation with its figures, and nobody else's.
    page.get_by_role("link", name="Evaluations").click()
    row = page.locator(f'tr[data-id="{evaluation_id}"]')
    expect(row).to_contain_text("SUCCEEDED")
    expect(row.locator('[data-col="samples-per-second"]')).to_have_text(re.compile(r"\d"))
    expect(page.locator("caption")).to_have_text("1 evaluation")
    expect(page.locator(f'tr[data-id="{other["id"]}"]')).to_have_count(0)
    page.get_by_label("Framework").fill("onnxruntime")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.get_by_text("No evaluation matches these filters.")).to_be_visible()

    # Cancel: a longer run, stopped from its page.
    page.get_by_role("link", name="New evaluation").first.click()
    expect(page.get_by_label("Model")).to_contain_text("resnet18")
    fill_form(page, framework="null", duration="3", targetQps="2000", samples="8")
    page.get_by_role("button", name="Submit evaluation").click()
    expect(page).to_have_url(re.compile(r"#/evaluations/"))
    page.get_by_role("button", name="Cancel evaluation").click()
    expect(page.locator('.status-state[data-state="CANCELLED"]')).to_be_visible()


def test_a_token_saved_in_one_tab_shows_in_the_others(
    page: Any, make_token: Callable[[str], str]
) -> None:
    """localStorage is shared by a site's tabs, so another tab already sends a token
    saved in this one; its header says so and its view reloads, and forgetting the token
    in one tab likewise shows "No token" in the other (it said "No token" until reload)."""
    from playwright.sync_api import expect

    other = page.context.new_page()
    page.goto("/")
    other.goto("/")
    expect(other.locator("#token-status")).to_have_text("No token")
    expect(other.get_by_text("Paste your API token in the field at the top right")).to_be_visible()

    page.get_by_label("API token").fill(make_token("alice-tabs"))
    page.get_by_role("button", name="Save token").click()
    expect(other.locator("#token-status")).to_have_text("Token saved")
    expect(other.get_by_label("API token")).to_have_value(
        page.get_by_label("API token").input_value()
    )
    expect(other.get_by_text("Paste your API token in the field at the top right")).to_have_count(0)

    page.get_by_role("button", name="Forget").click()
    expect(other.locator("#token-status")).to_have_text("No token")
    expect(other.get_by_label("API token")).to_have_value("")
