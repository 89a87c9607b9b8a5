"""Training evaluations in headless Chromium against a throw-away stack with a torch agent:
the run page shows what it trained with (not a LoadGen scenario), images/s with its 95 %
interval and the host's state, and charts of its step times and progress lines; a compare
of a 64 px and a 224 px run names the image size as the setting that differs and puts
each run's images/s beside its interval; a training scaling over 1 and 2 agents draws its
speedup and E(N). Screenshots go to /tmp/web-shots/."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.stack.manager import ENTRY_MODULE, ServiceSpec
from tests.integration.conftest import GraphQLClient
from tests.services.api.web.conftest import watched_page
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SHOTS = Path("/tmp/web-shots")
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Evaluation { id } ... on UserError { message field }
  }
}
"""
STORED = """
query($id: String!) {
  evaluation(id: $id) {
    state reason
    runs {
      training {
        settings { key value }
        statistics { imagesPerSecond low high steps }
        stepTimes(limit: 2000) { totalCount }
        log { step loss }
      }
    }
  }
}
"""
# Small and quick: resnet18 at batch 2, 20 measured steps (two progress lines, one every
# 10 steps) after one warm-up step; only the image size differs between the two runs.
TRAINING = {"steps": 20, "warmup": 1, "optimizer": "sgd"}


def submit(client: GraphQLClient, image_size: int) -> str:
    given = {
        "model": "resnet18",
        "framework": "torch",
        "batchSize": 2,
        "training": {**TRAINING, "imageSize": image_size},
    }
    created = client(SUBMIT, {"input": given})["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    return str(created["id"])


def finished(client: GraphQLClient, evaluation_id: str, timeout_s: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        evaluation: dict[str, Any] = client(STORED, {"id": evaluation_id})["evaluation"]
        if evaluation["state"] in {"SUCCEEDED", "FAILED", "CANCELLED"}:
            assert evaluation["state"] == "SUCCEEDED", evaluation
            training: dict[str, Any] = evaluation["runs"][0]["training"]
            return training
        assert time.monotonic() < deadline, evaluation
        time.sleep(0.5)


@pytest.fixture
def torch_page(browser: Any, torch_stack: EphemeralStack) -> Iterator[Any]:
    yield from watched_page(browser, torch_stack.api_url, height=1100)


def rendered(page: Any, name: str) -> Any:
    chart = page.locator(f'[data-chart="{name}"]')
    chart.locator(".main-svg").first.wait_for()
    page.wait_for_function(
        f"document.querySelector('[data-chart=\"{name}\"]')?.dataset.rendered === 'yes'"
    )
    return chart


def shown(value: float) -> str:
    """A figure as the page writes it: en-US grouping, at most one decimal."""
    return f"{round(value, 1):,.1f}".removesuffix(".0")


def test_training_run_page_and_a_compare_of_64_and_224_px(
    torch_page: Any, torch_stack: EphemeralStack, torch_client: GraphQLClient
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(exist_ok=True)
    small_id, large_id = submit(torch_client, 64), submit(torch_client, 224)
    small, large = finished(torch_client, small_id), finished(torch_client, large_id)
    settings = {s["key"]: s["value"] for s in small["settings"]}
    assert settings["image_size"] == "64" and settings["steps"] == "20"
    assert small["stepTimes"]["totalCount"] == 20 and [line["step"] for line in small["log"]] == [
        10,
        20,
    ]
    page = torch_page
    sign_in(page, torch_client.token)

    # The run page: training settings, no LoadGen scenario; images/s with its interval.
    page.goto(f"/#/evaluations/{small_id}")
    overview = page.locator("section", has=page.locator("#overview-title"))
    expect(overview.locator("#overview-title")).to_have_text("Training evaluation")
    expect(overview.locator('[data-setting="image_size"]')).to_have_text("64")
    expect(overview.locator('[data-setting="optimizer"]')).to_have_text("sgd")
    expect(overview).not_to_contain_text("Scenario")
    figure = page.locator('.figure[data-metric="images_per_second"]')
    statistics = small["statistics"]
    expect(figure.locator(".figure-value")).to_have_text(shown(statistics["imagesPerSecond"]))
    interval = figure.locator(".figure-interval")
    expect(interval).to_have_attribute("data-interval", "yes")
    expect(interval).to_have_text(f"95 % [{shown(statistics['low'])}, {shown(statistics['high'])}]")
    expect(page.locator("#headline-title [data-host]")).to_have_count(1)
    steps = rendered(page, "training-steps")
    assert steps.get_attribute("data-points") == "20"
    assert steps.evaluate("el => el.data[0].x.length") == 20
    loss = rendered(page, "training-loss")
    assert loss.evaluate("el => el.data[0].x") == [10, 20]
    page.screenshot(path=str(SHOTS / "training-run.png"), full_page=True)

    # The compare: the image size differs, each column's images/s beside its interval.
    page.goto(f"/#/compare?ids={small_id},{large_id}")
    row = page.locator('tr[data-setting="Image size (px)"]')
    expect(row).to_have_attribute("data-differs", "yes")
    expect(row.locator("td")).to_have_text(["64", "224"])
    expect(page.locator('tr[data-setting="Optimizer"]')).to_have_attribute("data-differs", "no")
    expect(page.get_by_text("Every setting is the same.")).to_have_count(0)
    expect(page.get_by_text("1 setting differs", exact=False)).to_be_visible()
    figures = page.locator('.training-figures tr[data-metric="images_per_second"] td.num')
    expect(figures).to_have_count(2)
    for cell, run in zip((figures.nth(0), figures.nth(1)), (small, large), strict=True):
        value = run["statistics"]
        expect(cell).to_contain_text(shown(value["imagesPerSecond"]))
        expect(cell.locator("[data-interval]")).to_have_text(
            f"[{shown(value['low'])}, {shown(value['high'])}]"
        )
    expect(page.locator(".training-figures [data-beyond]")).to_have_count(1)
    # No LoadGen columns for training runs: no latency table, no CDF.
    expect(page.locator('[data-metric="latency_p99"]')).to_have_count(0)
    bars = rendered(page, "compare-images")
    assert bars.evaluate("el => el.data[0].y.length") == 2
    page.screenshot(path=str(SHOTS / "training-compare.png"), full_page=True)


SUBMIT_SCALING = """
mutation($input: SubmitTrainingScalingInput!) {
  submitTrainingScaling(input: $input) {
    __typename ... on TrainingScaling { groupId } ... on UserError { message field }
  }
}
"""
SCALING = """
query($id: String!) {
  trainingScaling(groupId: $id) {
    state stopped
    points { worldSize speedup efficiency ranks { rank hostBusy evaluation { id } } }
  }
}
"""


@pytest.fixture
def second_torch_agent(
    torch_stack: EphemeralStack, torch_client: GraphQLClient
) -> Iterator[GraphQLClient]:
    """A second torch worker beside the stack's, for a gang of two."""
    argv = [sys.executable, "-m", ENTRY_MODULE, "worker", "inference", "--framework", "torch"]
    second = torch_stack.start_services([ServiceSpec("inference-torch-2", argv)], name="second")
    try:
        deadline = time.monotonic() + 90
        while True:
            agents = torch_client("{ agents { framework } }")["agents"]
            if sum(a["framework"] == "torch" for a in agents) >= 2:
                break
            assert time.monotonic() < deadline, torch_stack.logs()
            time.sleep(0.3)
        yield torch_client
    finally:
        second.stop(grace_s=10)


def test_a_training_scaling_page_draws_speedup_and_efficiency(
    torch_page: Any, torch_stack: EphemeralStack, second_torch_agent: GraphQLClient
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(exist_ok=True)
    client = second_torch_agent
    evaluation = {
        "model": "resnet18",
        "framework": "torch",
        "batchSize": 2,
        "training": {"steps": 3, "warmup": 1, "imageSize": 32},
    }
    given = {"worldSizes": [1, 2], "evaluation": evaluation}
    created = client(SUBMIT_SCALING, {"input": given})["submitTrainingScaling"]
    assert created["__typename"] == "TrainingScaling", created
    group = created["groupId"]
    deadline = time.monotonic() + 240
    while True:
        scaling = client(SCALING, {"id": group})["trainingScaling"]
        if scaling["state"] != "running":
            break
        assert time.monotonic() < deadline, scaling
        time.sleep(1.0)
    assert scaling["state"] == "done", scaling
    efficiency = [p["efficiency"] for p in scaling["points"]]
    assert efficiency[0] == pytest.approx(1.0) and efficiency[1] is not None

    page = torch_page
    sign_in(page, client.token)
    # A rank's page links to its scaling.
    rank = scaling["points"][1]["ranks"][0]["evaluation"]["id"]
    page.goto(f"/#/evaluations/{rank}")
    page.get_by_role("link", name="its scaling across world sizes").click()
    chart = rendered(page, "training-scaling")
    assert chart.get_attribute("data-points") == "2"
    assert chart.evaluate("el => el.data[0].x") == [1, 2]
    drawn = chart.evaluate("el => el.data[2].y")
    assert drawn == pytest.approx(efficiency)
    row = page.locator('tr[data-world-size="2"]')
    expect(row.locator("td").nth(4)).to_have_text(f"{efficiency[1]:.2f}".rstrip("0").rstrip("."))
    # Each rank's host state as stored: BUSY beside the ranks whose host was busy.
    for point in scaling["points"]:
        for member in point["ranks"]:
            cell = page.locator(
                f'tr[data-world-size="{point["worldSize"]}"] [data-rank="{member["rank"]}"]'
            )
            expect(cell.get_by_text("BUSY", exact=True)).to_have_count(
                1 if member["hostBusy"] else 0
            )
    page.screenshot(path=str(SHOTS / "training-scaling.png"), full_page=True)
