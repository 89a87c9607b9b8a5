"""One torch run profiled at LIBRARY through the stack (module-scoped: one stack, one run
for every test here). Its run page draws the roofline with every layer of its layer table
placed, under the peaks measured with it; the trace timeline opens on the measured
iterations (not the queue wait) with ticks in µs/ms/s; the flame graph draws one rect
per stored stack path; the operator table shows the stored profile's rows (what
`benchstack profile` prints). Screenshots go to /tmp/web-shots/."""

from __future__ import annotations

import re
import time
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

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

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
      profile
      traceTimeline(limit: 3000) { wholeStartMs wholeEndMs iterations { startMs endMs } }
      traceFlame(limit: 2000) { focusId nodes { id parent name } }
    }
  }
}
"""


@pytest.fixture
def torch_page(browser: Any, torch_stack: EphemeralStack) -> Iterator[Any]:  # noqa: F811
    yield from watched_page(browser, torch_stack.api_url, height=1000, timeout_ms=30_000)


@pytest.fixture(scope="module")
def profiled(torch_client: GraphQLClient) -> tuple[str, dict[str, Any]]:  # noqa: F811
    return profiled_run(torch_client)


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
                # LIBRARY runs the FRAMEWORK pass too (the roofline's) and the operators'.
                "traceLevel": "LIBRARY",
            }
        },
    )["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    evaluation = client.until_final(STORED, created["id"], timeout_s=240)
    assert evaluation["state"] == "SUCCEEDED", evaluation
    started = time.monotonic()
    client(STORED, {"id": created["id"]})
    print(f"the stored run's profile, timeline and flame graph: {time.monotonic() - started:.1f} s")
    (run,) = evaluation["runs"]
    return str(created["id"]), run


def test_the_run_page_places_every_layer_on_the_roofline(
    torch_page: Any,
    torch_client: GraphQLClient,  # noqa: F811
    profiled: tuple[str, dict[str, Any]],
) -> None:
    from playwright.sync_api import expect

    evaluation_id, run = profiled
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
    chart.locator(".main-svg").first.wait_for(timeout=90_000)
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


def tick_labels(chart: Any) -> list[str]:
    return list(
        chart.evaluate("el => [...el.querySelectorAll('.xtick text')].map(t => t.textContent)")
    )


def flame_rects(page: Any) -> int:
    return int(page.locator('[data-chart="flame-graph"] svg rect').count())


def test_the_trace_views_open_on_the_iterations_and_show_the_profiles_operators(
    torch_page: Any,
    torch_client: GraphQLClient,  # noqa: F811
    profiled: tuple[str, dict[str, Any]],
) -> None:
    from playwright.sync_api import expect

    evaluation_id, run = profiled
    timeline, flame, profile = run["traceTimeline"], run["traceFlame"], run["profile"]
    window = timeline["iterations"]
    assert window is not None, timeline
    # The queue wait and the run's set-up come before the iterations, in the same trace.
    assert window["startMs"] > timeline["wholeStartMs"]
    assert profile["library_ops"], "a LIBRARY pass records operators"

    sign_in(torch_page, torch_client.token)
    torch_page.goto("/#/")
    torch_page.locator(f'a[href="#/evaluations/{evaluation_id}"]').first.click()
    chart = torch_page.locator('[data-chart="trace-timeline"]')
    # Plain locator waits: the page's policy refuses the eval a string predicate needs.
    chart.locator(".main-svg").first.wait_for(timeout=90_000)
    expect(chart).to_have_attribute("data-rendered", "yes")
    # Opens on the iterations (2 % padding each side), not on the whole trace.
    low, high = chart.evaluate("el => el._fullLayout.xaxis.range")
    width = window["endMs"] - window["startMs"]
    assert low == pytest.approx(window["startMs"] - 0.02 * width, abs=1e-6 * width + 1e-3)
    assert high == pytest.approx(window["endMs"] + 0.02 * width, abs=1e-6 * width + 1e-3)
    assert chart.get_attribute("data-view") == "iterations"
    labels = tick_labels(chart)
    assert labels and all(re.fullmatch(r"-?[\d,]+(\.\d+)? (µs|ms|s)", t) for t in labels), labels
    SHOTS.mkdir(exist_ok=True)
    card = torch_page.locator('[aria-labelledby="timeline-title"]')
    card.screenshot(path=str(SHOTS / "trace-timeline.png"))
    card.locator('[data-view-button="whole"]').click()
    expect(chart).to_have_attribute("data-view", "whole")
    torch_page.wait_for_timeout(500)  # plotly's relayout redraws the ticks
    whole_labels = tick_labels(chart)
    assert all("k" not in t for t in whole_labels), whole_labels
    card.screenshot(path=str(SHOTS / "trace-timeline-whole.png"))

    # Flame graph: opens on the node holding the iterations, its ancestors above it.
    nodes = {n["id"]: n for n in flame["nodes"]}
    focus = flame["focusId"]
    assert focus is not None
    below = {focus}
    for node in sorted(nodes.values(), key=lambda n: n["id"]):
        if node["parent"] in below:
            below.add(node["id"])
    above, up = 0, nodes[focus]["parent"]
    while up is not None:
        above, up = above + 1, nodes[up]["parent"]
    holder = torch_page.locator('[data-chart="flame-graph"]')
    holder.locator("svg").wait_for()
    assert holder.get_attribute("data-view") == "iterations"
    assert flame_rects(torch_page) == len(below) + above
    names = set(
        holder.evaluate(
            "el => [...el.querySelectorAll('title')].map(t => t.textContent.split('\\n')[0])"
        )
    )
    assert {nodes[i]["name"] for i in below} <= names
    flame_card = torch_page.locator('[aria-labelledby="flame-title"]')
    flame_card.screenshot(path=str(SHOTS / "flame-graph.png"))
    flame_card.locator('[data-view-button="whole"]').click()
    assert holder.get_attribute("data-view") == "whole"
    assert flame_rects(torch_page) == len(nodes)

    # The operator table: the stored profile's rows (the CLI's), in its order.
    table = torch_page.locator('[data-table="operators"]')
    rows = table.locator("tbody tr")
    stored = profile["library_ops"]
    assert rows.count() == len(stored)
    shown = rows.evaluate_all("rs => rs.map(r => r.dataset.name)")
    assert shown == [r["name"] for r in stored]
    medians = rows.evaluate_all(
        "rs => rs.map(r => r.querySelector('[data-key=medianMs]').textContent)"
    )
    for text, row in zip(medians, stored, strict=True):
        assert float(text.replace(",", "")) == pytest.approx(row["median_ms"], abs=6e-4)
    # A header click sorts by that column, largest first.
    table.locator('th[data-key="calls"] button').click()
    calls = rows.evaluate_all(
        "rs => rs.map(r => Number("
        "r.querySelector('[data-key=calls]').textContent.replace(/,/g, '')))"
    )
    assert calls == sorted(calls, reverse=True)
    torch_page.locator('[aria-labelledby="operators-title"]').screenshot(
        path=str(SHOTS / "operators.png")
    )
