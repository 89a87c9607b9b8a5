"""A sweep made from the web form in headless Chromium: the form submits one evaluation
per value, the sweep page follows them to the end and draws the curve with one point per
value (checked against the stored sweep), and says the model loaded once."""

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
SWEEP = """
query($id: String!) {
  sweep(groupId: $id) {
    modelLoads
    points {
      value samplesPerSecond evaluation { state }
      run { confidence { samplesPerSecond { estimate low high } } }
    }
  }
}
"""


def test_a_sweep_submitted_from_the_form_completes_and_draws_its_curve(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("gina-sweep")
    sign_in(page, token)
    page.goto("/#/new")
    page.locator('select[name="model"]').select_option(label="resnet18 1.0.0 (torch)")
    page.locator('input[name="framework"]').fill("null")
    page.locator('input[name="duration"]').fill("0.2")
    page.locator('input[name="targetQps"]').fill("2000")
    page.locator('input[name="samples"]').fill("16")
    page.locator('select[name="workflow"]').select_option("sweep")
    page.locator('select[name="sweepParameter"]').select_option("batch_size")
    page.locator('input[name="sweepValues"]').fill("1,2,4,8")
    page.get_by_role("button", name="Submit sweep").click()
    page.wait_for_url("**/#/sweeps/*")
    group_id = page.url.rsplit("/", 1)[1]

    client = GraphQLClient(stack.api_url, token)
    deadline = time.monotonic() + 180
    while True:
        sweep: dict[str, Any] = client(SWEEP, {"id": group_id})["sweep"]
        if all(p["evaluation"]["state"] == "SUCCEEDED" for p in sweep["points"]):
            break
        assert time.monotonic() < deadline, sweep
        time.sleep(0.5)
    assert [p["value"] for p in sweep["points"]] == [1, 2, 4, 8]

    # The page polls until every point is done, then draws all four on the curve.
    # (A locator wait: wait_for_function's polling evaluates strings, which the page's
    # content security policy refuses.)
    curve = page.locator('[data-chart="sweep-curve"]')
    expect(curve).to_have_attribute("data-points", "4")
    # Offline latencies are queue positions: its curve is throughput against batch size.
    assert curve.evaluate("el => el.data[0].x") == [1, 2, 4, 8]
    assert curve.evaluate("el => el.data[0].y") == [p["samplesPerSecond"] for p in sweep["points"]]
    # Each point carries its stored 95 % interval as an error bar, none where it has none.
    wanted = []
    for point in sweep["points"]:
        interval = point["run"]["confidence"]["samplesPerSecond"]
        wanted.append(None if interval["low"] is None else interval["high"] - interval["estimate"])
    drawn = curve.evaluate("el => el.data[0].error_y.array")
    assert drawn == pytest.approx(wanted), (drawn, wanted)
    visible = curve.evaluate(
        "el => [...el.querySelectorAll('path.yerror')].filter((p) => p.getAttribute('d')).length"
    )
    assert visible == sum(w is not None for w in wanted), (visible, wanted)
    expect(page.locator("table[data-sweep-points] tbody tr")).to_have_count(4)
    # Offline: no latency columns (its latencies are queue positions).
    expect(page.locator("table[data-sweep-points] thead")).not_to_contain_text("p99")
    expect(page.locator("table[data-sweep-points] tbody")).not_to_contain_text("QUEUED")
    loads = sweep["modelLoads"]
    expect(page.get_by_text(f"model loaded {loads} time")).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "sweep.png"), full_page=True)
