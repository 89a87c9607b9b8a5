"""Charts, compare, agents and models pages in headless Chromium against the throw-away
stack: each chart is checked against the stored data it draws (points, bars), compare
marks the setting that differs, the agents page lists the stack's agent. Screenshots of
each page go to /tmp/web-shots/."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.core.confidence import Interval, differ
from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

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
      report
      validity
      latencySample(limit: 2000) { totalCount latenciesMs downsampled }
      traceTimeline(limit: 400) { totalSpans spans { name } }
      layers { name }
      confidence { samplesPerSecond { low high reason } }
    }
  }
}
"""


def finished(client: GraphQLClient, evaluation_id: str, timeout_s: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        evaluation: dict[str, Any] = client(STORED, {"id": evaluation_id})["evaluation"]
        if evaluation["state"] in {"SUCCEEDED", "FAILED", "CANCELLED"}:
            assert evaluation["state"] == "SUCCEEDED", evaluation
            return evaluation
        assert time.monotonic() < deadline, evaluation
        time.sleep(0.3)


def submit(client: GraphQLClient, **extra: Any) -> str:
    created = client(
        SUBMIT,
        {
            "input": {
                "model": "resnet18",
                "framework": "null",
                "scenario": "offline",
                "samples": 16,
                "settings": {"minDurationS": 0.3, "targetQps": 2000},
                **extra,
            }
        },
    )["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    return str(created["id"])


def rendered(page: Any, name: str) -> Any:
    chart = page.locator(f'[data-chart="{name}"]')
    chart.locator(".main-svg").first.wait_for()
    page.wait_for_function(
        f"document.querySelector('[data-chart=\"{name}\"]')?.dataset.rendered === 'yes'"
    )
    return chart


def bars(chart: Any) -> int:
    """Bars plotly drew: one .point per bar, in the SVG."""
    count: int = chart.evaluate("el => el.querySelectorAll('.barlayer .bars .point').length")
    return count


def test_run_charts_compare_agents_and_models(
    page: Any,
    stack: EphemeralStack,
    make_token: Callable[[str], str],
) -> None:
    from playwright.sync_api import expect

    SHOTS.mkdir(exist_ok=True)
    token = make_token("carol-charts")
    client = GraphQLClient(stack.api_url, token)
    traced_id = submit(client, batchSize=1, traceLevel="MODEL")
    other_id = submit(client, batchSize=2)
    traced = finished(client, traced_id)
    other = finished(client, other_id)
    (run,) = traced["runs"]
    sample = run["latencySample"]
    windows = run["report"]["stability"]["windows"]
    spans = run["traceTimeline"]["spans"]
    assert sample["totalCount"] > 0 and not sample["downsampled"]
    assert windows and spans

    sign_in(page, token)

    # A run's page: every chart drawn from what is stored.
    page.goto(f"/#/evaluations/{traced_id}")
    cdf = rendered(page, "latency-cdf")
    assert cdf.evaluate("el => el.data[0].x.length") == len(sample["latenciesMs"])
    assert cdf.get_attribute("data-points") == str(sample["totalCount"])
    assert cdf.evaluate("el => el.querySelectorAll('.scatterlayer .trace').length") == 1
    histogram = rendered(page, "latency-histogram")
    # Every stored latency falls in a bin: the bins' shares add up to 100 %.
    shares = histogram.evaluate("el => el.calcdata[0].map((bin) => bin.s)")
    assert sum(shares) == pytest.approx(100.0)
    assert bars(histogram) == len(shares)
    expect(page.locator('[data-sampling="all"]').first).to_contain_text(
        f"all {sample['totalCount']} samples"
    )
    stability = rendered(page, "stability-windows")
    assert bars(stability) == len(windows)
    assert stability.evaluate("el => el.data[1].y") == pytest.approx(
        [w["median_latency_ms"] for w in windows]
    )
    timeline = rendered(page, "trace-timeline")
    assert bars(timeline) == len(spans)
    # The null backend records no layer table, and the page says so instead of a chart.
    expect(page.locator('[aria-labelledby="layers-title"]')).to_contain_text("No layer table")
    expect(page.locator('[aria-labelledby="roofline-title"]')).to_contain_text("No roofline")
    expect(page.get_by_role("heading", name="Latency distribution")).to_contain_text("VALID")
    # The headline's throughput carries its stored 95 % interval (or says it has none).
    interval = run["confidence"]["samplesPerSecond"]
    shown = page.locator('[data-metric="samples_per_second"] .figure-interval')
    if interval["low"] is None:
        expect(shown).to_have_text("no 95 % interval")
    else:
        expect(shown).to_have_text(re.compile(r"^95 % \[[\d,.]+, [\d,.]+\]$"))
        bracket = shown.inner_text().split("[")[1].rstrip("]")
        low = float(bracket.split(", ")[0].replace(",", ""))
        assert low == pytest.approx(interval["low"], abs=0.06)
    # Advice names the form's fields, not the CLI's flags (the API's text serves both).
    expect(page.locator('[data-role="interval-basis"]')).not_to_contain_text("--")
    page.screenshot(path=str(SHOTS / "run.png"), full_page=True)

    # Compare: picked on the list, the differing batch size marked, both curves overlaid.
    page.get_by_role("link", name="Evaluations", exact=True).click()
    for evaluation_id in (traced_id, other_id):
        page.locator(f'input[data-select="{evaluation_id}"]').check()
    page.get_by_role("button", name="Compare selected (2)").click()
    expect(page).to_have_url(f"{stack.api_url}/#/compare?ids={traced_id},{other_id}")
    differing = page.locator('tr[data-setting="Batch size"]')
    expect(differing).to_have_attribute("data-differs", "yes")
    expect(differing).to_contain_text("differs")
    expect(page.locator('tr[data-setting="Model"]')).to_have_attribute("data-differs", "no")
    expect(page.locator('tr[data-verdict="validity"]')).to_contain_text("VALID")
    # Both are Offline: their latencies are queue positions, so no CDF and no p99 bars,
    # and the page says why; throughput bars carry their intervals as error bars.
    expect(page.locator("[data-offline-note]")).to_contain_text("2 Offline evaluations")
    expect(page.locator('[data-chart="compare-cdf"]')).to_have_count(0)
    expect(page.locator('[data-chart="compare-p99"]')).to_have_count(0)
    throughput = rendered(page, "compare-throughput")
    assert bars(throughput) == 2
    with_interval = sum(
        r["confidence"]["samplesPerSecond"]["low"] is not None for r in (run, other["runs"][0])
    )
    drawn = throughput.evaluate(
        "el => [...el.querySelectorAll('path.yerror')].filter((p) => p.getAttribute('d')).length"
    )
    assert drawn == with_interval, (drawn, with_interval)
    # Whether the two throughputs differ beyond their intervals, judged as the CLI does.
    first, second = (
        Interval(None, **r["confidence"]["samplesPerSecond"]) for r in (run, other["runs"][0])
    )
    verdict, _ = differ(first, second)
    if any(r["validity"] != "VALID" for r in (run, other["runs"][0])):
        verdict = "cannot say"  # a run LoadGen did not judge gets no verdict, as in the CLI
    beyond = page.locator('tr[data-metric="samples_per_second"] [data-beyond]')
    expect(beyond).to_have_attribute("data-beyond", verdict)
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)

    # The same comparison from its URL alone, as someone it was shared with opens it.
    page.goto(f"/#/compare?ids={other_id},{traced_id}")
    expect(page.locator('tr[data-setting="Batch size"]')).to_have_attribute("data-differs", "yes")

    # Agents: the stack's agent, live, with this caller's evaluations on it.
    (agent,) = client("{ agents { id framework } }")["agents"]
    page.get_by_role("link", name="Agents").click()
    card = page.locator(f'[data-agent="{agent["id"]}"]')
    expect(card).to_contain_text(agent["framework"])
    expect(card.locator("[data-live]")).to_have_text("LIVE")
    expect(card.locator(f'li[data-id="{traced_id}"]')).to_be_visible()
    page.screenshot(path=str(SHOTS / "agents.png"), full_page=True)
    # An agent that stopped beating: folded below the live ones, shown once unfolded.
    gone_id = _add_gone_agent(stack.database_url)
    try:
        # The API keeps the agents list a moment (api_shared_reads_cache_seconds, 1 s).
        time.sleep(1.5)
        page.reload()
        expect(page.locator(f'[data-agent="{agent["id"]}"]')).to_be_visible()
        folded = page.locator("details.gone-agents")
        expect(folded.locator("summary")).to_have_text("1 agent not live")
        gone_card = page.locator(f'[data-agent="{gone_id}"]')
        expect(gone_card).to_be_hidden()
        folded.locator("summary").click()
        expect(gone_card.locator("[data-live]")).to_have_text("NOT LIVE")
        page.screenshot(path=str(SHOTS / "agents-folded.png"), full_page=True)
    finally:
        _remove_agent(stack.database_url, gone_id)

    # Models: the catalogue with its manifests.
    page.get_by_role("link", name="Models").click()
    resnet = page.locator('[data-origin="catalogue"] tr[data-model^="resnet18@"]').first
    expect(resnet).to_be_visible()
    resnet.get_by_text("Show manifest").click()
    expect(resnet.locator("pre.manifest")).to_contain_text('"name": "resnet18"')
    page.screenshot(path=str(SHOTS / "models.png"), full_page=True)


def _add_gone_agent(database_url: str) -> str:
    """An agent row whose last heartbeat is a day old (a worker that stopped)."""
    from datetime import UTC, datetime, timedelta

    from shared.db.evaluations import Agent
    from shared.db.session import session_scope

    day_ago = datetime.now(UTC) - timedelta(days=1)
    agent_id = "gone-host/inference.null.cpu/4242"
    with session_scope(database_url) as session:
        session.add(
            Agent(
                id=agent_id,
                hostname="gone-host",
                queue="inference.null.cpu",
                framework="null",
                framework_version="0",
                device="cpu",
                started_at=day_ago,
                last_heartbeat=day_ago,
            )
        )
    return agent_id


def _remove_agent(database_url: str, agent_id: str) -> None:
    from shared.db.evaluations import Agent
    from shared.db.session import session_scope

    with session_scope(database_url) as session:
        row = session.get(Agent, agent_id)
        if row is not None:
            session.delete(row)
