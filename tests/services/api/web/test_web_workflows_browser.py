"""The submit form's workflows in headless Chromium, each walked from the evaluations list:
open the form, choose the workflow, submit, land on the page of what was made, and go back
to the list, where it appears; and one bad input per workflow, whose error the form shows
next to the field the API names. The workflows that ran there before (one, sweep,
find-peak, repeats) have tests of their own; these are the ones added for issue 35: the
accuracy + performance pair, bricks, training, training scaling and model registration.

One torch stack (bricks and training need a torch model on a torch agent) and one page for
the module. Nothing is waited for to finish: landing on the page and finding the item in
the list is what the form owes. Screenshots go to /tmp/web-shots/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient
from tests.services.api.web.conftest import watched_page
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SHOTS = Path("/tmp/web-shots")


@pytest.fixture(scope="module")
def form_page(
    browser: Any, torch_stack: EphemeralStack, torch_client: GraphQLClient
) -> Iterator[Any]:
    """One signed-in page for every walk of this module."""
    SHOTS.mkdir(exist_ok=True)
    for page in watched_page(browser, torch_stack.api_url, height=1100):
        sign_in(page, torch_client.token)
        yield page


def open_form(page: Any, workflow: str) -> None:
    """From the list: the "New evaluation" button, then the workflow."""
    from playwright.sync_api import expect

    page.goto("/#/")
    page.locator(".compare-bar").get_by_role("link", name="New evaluation").click()
    expect(page).to_have_url(re.compile(r"#/new$"))
    page.locator('select[name="workflow"]').select_option(workflow)
    if workflow != "register":
        model = page.locator('select[name="model"] option[value^="resnet18@"]').first
        page.locator('select[name="model"]').select_option(model.get_attribute("value"))
        page.locator('input[name="framework"]').fill("torch")


def submit(page: Any) -> None:
    page.locator(".submit-form .actions button[type=submit]").click()


def field_error(page: Any, control: str, api_field: str, shot: str) -> None:
    """The API's error, named by its field, beside the control it is about."""
    from playwright.sync_api import expect

    error = page.locator(f'[data-field="{control}"] .field-error')
    expect(error).to_be_visible()
    expect(error.locator("strong")).to_have_text(api_field)
    expect(
        page.locator(f'[data-field="{control}"]').locator("input, select, textarea")
    ).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=str(SHOTS / f"workflow-{shot}-error.png"), full_page=True)


def back_to_list(page: Any, landed: str) -> None:
    """The landing page's own link back to the list, where the item appears."""
    from playwright.sync_api import expect

    page.get_by_role("link", name="← All evaluations").click()
    expect(page).to_have_url(re.compile(r"#/$"))
    item = page.locator(f'.table-wrap a[href="{landed}"]')
    expect(item.first).to_be_visible()


def landed_on(page: Any, pattern: str) -> str:
    from playwright.sync_api import expect

    expect(page).to_have_url(re.compile(pattern))
    return "#" + str(page.url).split("#", 1)[1]


def test_a_bricks_evaluation_from_the_form(form_page: Any) -> None:
    from playwright.sync_api import expect

    page = form_page
    open_form(page, "bricks")
    # Hidden with the workflows they belong to: no dataset, no scenario for bricks.
    expect(page.locator('select[name="dataset"]')).to_be_hidden()
    expect(page.locator('select[name="scenario"]')).to_be_hidden()
    page.locator('input[name="bricksGranularity"]').fill("0")
    submit(page)
    field_error(page, "bricksGranularity", "bricks.granularity", "bricks")

    page.locator('input[name="bricksGranularity"]').fill("8")
    page.locator('input[name="bricksImageSize"]').fill("32")
    page.locator('input[name="bricksQueries"]').fill("2")
    page.locator('input[name="bricksMinDurationS"]').fill("0.01")
    submit(page)
    landed = landed_on(page, r"#/evaluations/[\w-]+$")
    expect(page.locator("#live-title")).to_be_visible()
    page.screenshot(path=str(SHOTS / "workflow-bricks.png"), full_page=True)
    back_to_list(page, landed)


def test_a_training_evaluation_from_the_form(form_page: Any) -> None:
    from playwright.sync_api import expect

    page = form_page
    open_form(page, "training")
    page.locator('input[name="trainingSteps"]').fill("0")
    submit(page)
    field_error(page, "trainingSteps", "training.steps", "training")

    page.locator('input[name="trainingSteps"]').fill("2")
    page.locator('input[name="trainingWarmup"]').fill("1")
    page.locator('input[name="trainingImageSize"]').fill("32")
    submit(page)
    landed = landed_on(page, r"#/evaluations/[\w-]+$")
    expect(page.locator("#live-title")).to_be_visible()
    page.screenshot(path=str(SHOTS / "workflow-training.png"), full_page=True)
    back_to_list(page, landed)


def test_a_training_scaling_from_the_form(form_page: Any) -> None:
    from playwright.sync_api import expect

    page = form_page
    open_form(page, "training-scaling")
    page.locator('input[name="worldSizes"]').fill("0")
    submit(page)
    field_error(page, "worldSizes", "worldSizes", "training-scaling")

    page.locator('input[name="worldSizes"]').fill("1")
    page.locator('input[name="trainingSteps"]').fill("2")
    page.locator('input[name="trainingWarmup"]').fill("1")
    page.locator('input[name="trainingImageSize"]').fill("32")
    submit(page)
    landed = landed_on(page, r"#/training-scaling/[\w-]+$")
    expect(page.locator("#scaling-table-title")).to_be_visible()
    page.screenshot(path=str(SHOTS / "workflow-training-scaling.png"), full_page=True)
    back_to_list(page, landed)


def test_an_accuracy_performance_pair_from_the_form(form_page: Any) -> None:
    from playwright.sync_api import expect

    page = form_page
    open_form(page, "pair")
    page.locator('input[name="batchSize"]').fill("0")
    submit(page)
    field_error(page, "batchSize", "batchSize", "pair")

    page.locator('input[name="batchSize"]').fill("1")
    page.locator('input[name="samples"]').fill("4")
    page.locator('input[name="duration"]').fill("1")
    submit(page)
    landed = landed_on(page, r"#/compare\?group=[\w-]+$")
    expect(page.locator("#settings-title")).to_be_visible()
    page.screenshot(path=str(SHOTS / "workflow-pair.png"), full_page=True)
    back_to_list(page, landed)


def test_a_model_registration_from_the_form(form_page: Any) -> None:
    from playwright.sync_api import expect

    from services.core.catalogue import CATALOGUE_DIR

    page = form_page
    open_form(page, "register")
    # Only the manifest and its sharing: nothing of a run.
    expect(page.locator('select[name="model"]')).to_be_hidden()
    expect(page.locator('input[name="batchSize"]')).to_be_hidden()
    page.locator('textarea[name="manifest"]').fill("name: x")
    submit(page)
    field_error(page, "manifest", "manifest", "register")
    # Every problem the API found, one a line, as `benchstack manifest validate` lists them.
    problems = page.locator('[data-field="manifest"] .field-error').inner_text().splitlines()
    assert len(problems) >= 2 and all("required" in p for p in problems), problems

    text = (CATALOGUE_DIR / "resnet18.yaml").read_text()
    page.locator('textarea[name="manifest"]').fill(text)
    submit(page)
    # A catalogue name is refused, by the manifest's field "name", shown at the manifest.
    field_error(page, "manifest", "name", "register-catalogue-name")

    page.locator('textarea[name="manifest"]').fill(text.replace("name: resnet18", "name: form-net"))
    submit(page)
    expect(page).to_have_url(re.compile(r"#/models\?model=form-net%40"))
    row = page.locator("tr.chosen")
    expect(row).to_have_attribute("data-model", re.compile(r"^form-net@"))
    expect(row.locator("details")).to_have_attribute("open", "")
    page.screenshot(path=str(SHOTS / "workflow-register.png"), full_page=True)
    page.get_by_role("link", name="← All evaluations").click()
    expect(page).to_have_url(re.compile(r"#/$"))
    # The form now offers it.
    page.goto("/#/new")
    expect(page.locator('select[name="model"] option[value^="form-net@"]')).to_have_count(1)
