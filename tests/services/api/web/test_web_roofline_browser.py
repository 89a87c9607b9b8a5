"""A torch run profiled at FRAMEWORK through the stack: its run page draws the roofline
with every layer of its layer table placed, under the peaks measured with it, and says
what the peaks are. A screenshot goes to /tmp/web-shots/roofline.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import (  # noqa: F401  (fixtures, re-used by name)
    GraphQLClient,
    torch_client,
    torch_stack,
)
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
      layers { name }
      roofline { peaks { gflops gbps } points { name intensity gflops bound } unplaced }
    }
  }
}
"""


@pytest.fixture
def torch_page(browser: Any, torch_stack: EphemeralStack) -> Iterator[Any]:  # noqa: F811
    yield from watched_page(browser, torch_stack.api_url, height=1000, timeout_ms=30_000)


def profiled_run(client: GraphQLClient) -> tuple[str, dict[str, Any]]:
    created = client(
        SUBMIT,
        {
            "input": {
                "model": "resnet18",
                "framework": "torch",
                "scenario": "single-stream",
                "settings": {"minDurationS": 0.3},
                "samples": 8,
                "traceLevel": "FRAMEWORK",
            }
        },
    )["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    evaluation = client.until_final(STORED, created["id"], timeout_s=240)
    assert evaluation["state"] == "SUCCEEDED", evaluation
    (run,) = evaluation["runs"]
    return str(created["id"]), run


def test_the_run_page_places_every_layer_on_the_roofline(
    torch_page: Any,
    torch_client: GraphQLClient,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    evaluation_id, run = profiled_run(torch_client)
    roofline = run["roofline"]
    assert roofline is not None, run
    assert roofline["unplaced"] == []
    assert {p["name"] for p in roofline["points"]} == {layer["name"] for layer in run["layers"]}
    peaks = roofline["peaks"]
    assert peaks["gflops"] > 0 and peaks["gbps"] > 0
    # Convolutions are compute-bound at resnet18's sizes on any CPU with a roof at all.
    bounds = {p["name"]: p["bound"] for p in roofline["points"]}
    assert bounds["layer2.0.conv2"] == "compute", bounds

    sign_in(torch_page, torch_client.token)
    torch_page.goto(f"/#/evaluations/{evaluation_id}")
    chart = torch_page.locator('[data-chart="roofline"]')
    chart.locator(".main-svg").first.wait_for()
    torch_page.wait_for_function(
        "document.querySelector('[data-chart=\"roofline\"]')?.dataset.rendered === 'yes'"
    )
    drawn = chart.evaluate("el => el.data.slice(1).reduce((n, t) => n + t.x.length, 0)")
    assert drawn == len(roofline["points"])
    # The roof is drawn from the stored peaks: flat at the GEMM peak.
    assert chart.evaluate("el => el.data[0].y[2]") == pytest.approx(peaks["gflops"])
    expect(torch_page.locator("[data-roofline-peaks]")).to_contain_text("GFLOP/s")
    SHOTS.mkdir(exist_ok=True)
    torch_page.locator('[aria-labelledby="roofline-title"]').screenshot(
        path=str(SHOTS / "roofline.png")
    )
