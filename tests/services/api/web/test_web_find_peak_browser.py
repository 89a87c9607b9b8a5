"""Find-peak and repeats made from the web form in headless Chromium: the form's "Workflow"
select sends submitFindPeak or submitRepeats, the group's page follows it to the end and
draws one marker per stored probe (or one bar per run), checked against the stored data;
a bad latency bound is shown next to its control. Screenshots go to /tmp/shots/."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SHOTS = Path("/tmp/shots")
FIND_PEAK = """
query($id: String!) {
  findPeak(groupId: $id) {
    state verdict peakQps peakRunId latencyBoundMs percentile
    probes {
      qps runId passed judged latencyMs evaluation { state scenario }
      latencyInterval { estimate low high }
    }
  }
}
"""
REPEATS = """
query($id: String!) {
  repeats(groupId: $id) {
    count agents
    repeats {
      index evaluation { state }
      run { samplesPerSecond confidence { samplesPerSecond { estimate low high } } }
    }
    spread { name count }
  }
}
"""
FINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def open_form(page: Any, token: str) -> None:
    from playwright.sync_api import expect

    sign_in(page, token)
    page.goto("/#/new")
    model = page.locator('select[name="model"]')
    expect(model).to_contain_text("resnet18")
    model.select_option(label="resnet18 1.0.0 (torch)")
    page.locator('input[name="framework"]').fill("null")


def fill(page: Any, **values: str) -> None:
    for name, value in values.items():
        page.locator(f'.submit-form [name="{name}"]').fill(value)


def wait_for(read: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool]) -> Any:
    deadline = time.monotonic() + 45
    while True:
        found = read()
        if done(found):
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.5)


def test_a_find_peak_submitted_from_the_form_is_followed_and_charted(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("olga-peak-web")
    open_form(page, token)
    page.locator('select[name="workflow"]').select_option("find-peak")
    # The search sets the scenario and rate of each probe: those controls are not offered.
    expect(page.locator('select[name="scenario"]')).to_be_hidden()
    expect(page.locator('input[name="targetQps"]')).to_be_hidden()
    expect(page.locator('input[name="fanOut"]')).to_be_hidden()
    # The null backend at 2 ms a query: a server of known capacity (500/s).
    fill(page, duration="1.5", samples="16", backendOptions="service_time_ms=2")
    fill(page, latencyBoundMs="50", startQps="250", tolerance="0.5", maxProbes="3")
    page.locator('select[name="percentile"]').select_option("99")
    page.get_by_role("button", name="Start find peak").click()
    page.wait_for_url("**/#/find-peak/*")
    group_id = page.url.rsplit("/", 1)[1]
    expect(page.locator(".find-peak-summary")).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "find-peak-searching.png"), full_page=True)

    client = GraphQLClient(stack.api_url, token)
    found = wait_for(
        lambda: client(FIND_PEAK, {"id": group_id})["findPeak"],
        lambda f: f["state"] != "searching",
    )
    assert found["state"] == "done", found
    assert found["latencyBoundMs"] == 50 and found["percentile"] == 99
    probes = found["probes"]
    assert 2 <= len(probes) <= 3 and probes[0]["qps"] == 250, found
    assert all(p["evaluation"]["scenario"]["scenario"] == "server" for p in probes)
    stored = [p for p in probes if p["runId"] and p["latencyMs"] is not None]
    assert len(stored) == len(probes), found

    # The page polls until the search ends, then draws one marker per stored probe.
    expect(page.locator(".find-peak-summary [data-state]")).to_have_attribute("data-state", "done")
    chart = page.locator('[data-chart="find-peak"]')
    expect(chart).to_have_attribute("data-points", str(len(stored)))
    expect(chart.locator(".scatterlayer .point")).to_have_count(len(stored))
    # Each probe's judged latency carries its stored 95 % interval as an error bar.
    arms = chart.evaluate(
        "el => el.data.flatMap((t) => t.x.map((x, i) => [x, t.error_y.array[i]]))"
    )
    for qps, arm in arms:
        (probe,) = [p for p in stored if p["qps"] == qps]
        interval = probe["latencyInterval"]
        if interval is None or interval["high"] is None:
            assert arm is None, (probe, arm)
        else:
            assert arm == pytest.approx(interval["high"] - interval["estimate"]), (probe, arm)
    # The bound is one dashed line across the plot.
    expect(chart.locator(".shapelayer path")).to_have_count(1)
    expect(page.locator("table[data-probes] tbody tr")).to_have_count(len(probes))
    expect(page.locator("table[data-probes] tbody")).not_to_contain_text("QUEUED")
    expect(page.get_by_text("p99 ≤ 50 ms").first).to_be_visible()
    if found["verdict"] == "peak":
        expect(page.locator('[data-outcome="peak"]')).to_be_visible()
        expect(page.locator("tr[data-peak]")).to_have_count(1)
        expect(chart).to_contain_text("peak")
    else:
        expect(page.locator('[data-outcome="no-peak"]')).to_contain_text("No valid peak")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "find-peak.png"), full_page=True)


def test_repeats_submitted_from_the_form_show_each_run_and_their_spread(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    token = make_token("olga-repeats-web")
    open_form(page, token)
    page.locator('select[name="workflow"]').select_option("repeats")
    page.locator('select[name="scenario"]').select_option("offline")
    fill(page, count="2", duration="0.3", targetQps="2000", samples="16")
    fill(page, backendOptions="service_time_ms=0.25")
    page.get_by_role("button", name="Submit repeats").click()
    page.wait_for_url("**/#/repeats/*")
    group_id = page.url.rsplit("/", 1)[1]

    client = GraphQLClient(stack.api_url, token)
    found = wait_for(
        lambda: client(REPEATS, {"id": group_id})["repeats"],
        lambda f: all(r["evaluation"]["state"] in FINAL for r in f["repeats"]),
    )
    assert found["count"] == 2
    assert [r["evaluation"]["state"] for r in found["repeats"]] == ["SUCCEEDED"] * 2, found

    expect(page.locator("table[data-repeats] tbody tr")).to_have_count(2)
    expect(page.locator("table[data-repeats] tbody")).not_to_contain_text("QUEUED")
    chart = page.locator('[data-chart="repeats"]')
    expect(chart).to_have_attribute("data-points", "2")
    expect(chart.locator(".barlayer .point")).to_have_count(2)
    # Each bar carries its run's own 95 % interval, none where it has none.
    wanted = []
    for r in found["repeats"]:
        interval = r["run"]["confidence"]["samplesPerSecond"]
        wanted.append(None if interval["low"] is None else interval["high"] - interval["estimate"])
    drawn = chart.evaluate("el => el.data[0].error_y.array")
    assert drawn == pytest.approx(wanted), (drawn, wanted)
    spread = page.locator('table[data-spread] tr[data-figure="samples_per_second"]')
    expect(spread).to_be_visible()
    # Offline latencies are queue positions: no latency column, row or figure.
    expect(page.locator("table[data-repeats] thead")).not_to_contain_text("p99")
    expect(page.locator('table[data-spread] tr[data-figure^="latency"]')).to_have_count(0)
    expect(page.locator("[data-offline-note]")).to_be_visible()
    # Two runs give no interval over runs: the reason is said instead.
    expect(page.locator("[data-interval-reason]")).to_contain_text("needs 5")
    expect(page.locator("[data-mixed-agents]")).to_have_count(int(len(found["agents"]) > 1))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "repeats.png"), full_page=True)


def test_a_bad_latency_bound_is_shown_by_its_control(
    page: Any, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    open_form(page, make_token("olga-form-web"))
    page.locator('select[name="workflow"]').select_option("find-peak")
    fill(page, latencyBoundMs="-1", duration="1")
    page.get_by_role("button", name="Start find peak").click()
    error = page.locator('[data-field="latencyBoundMs"] .field-error')
    expect(error).to_contain_text("latencyBoundMs")
    expect(error).to_contain_text("accepted: above 0")
    expect(page.locator(".form-errors")).to_contain_text("InvalidInput in field “latencyBoundMs”")
    expect(page.locator('input[name="latencyBoundMs"]')).to_have_attribute("aria-invalid", "true")
    expect(page).to_have_url(re.compile(r"#/new$"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "form-find-peak-error.png"), full_page=True)

    # A backend option the form cannot send, and one the backend refuses, by the same control.
    page.locator('select[name="workflow"]').select_option("one")
    fill(page, backendOptions="service_time_ms")
    page.get_by_role("button", name="Submit evaluation").click()
    options_error = page.locator('[data-field="backendOptions"] .field-error')
    expect(options_error).to_contain_text("must look like key=value")
    fill(page, backendOptions="no_such_option=1")
    page.get_by_role("button", name="Submit evaluation").click()
    expect(options_error).to_contain_text("backendOptions.no_such_option")
    expect(page.locator('input[name="fanOut"]')).to_be_visible()
    page.screenshot(path=str(SHOTS / "form-one-error.png"), full_page=True)
