"""A generative evaluation through a stack: submitted with its typed options
(``submitEvaluation(generative: ...)``), measured by the agent with the transformers
engine on the tiny Llama (a few prompts, 8 output tokens), its token figures served by
GraphQL (``Run.generative``), its CSV columns written by `benchstack report --csv`, and its
section drawn on the run page in Chromium by the workload's own module (web/view.js):
the figures with their intervals, LoadGen's verdict and both CDF charts."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from services.stack.manager import ENTRY_MODULE, ServiceSpec
from tests.integration.conftest import GraphQLClient, running_stack
from tests.services.api.web.conftest import watched_page
from tests.support.ephemeral import EphemeralStack
from tests.support.streaming_server import streaming_server
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[4]
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Evaluation { id } ... on UserError { message field }
  }
}
"""
RESULT = """
query($id: String!) { evaluation(id: $id) { state reason runs { id } } }
"""
GENERATIVE = """
query($id: String!) {
  evaluation(id: $id) {
    runs {
      generative {
        settings { key value }
        figures { name estimate low high intervalReason loadgen unit }
        validity validityReasons stability
        requests { issued completed failed outputTokens }
        ttftCdf { count valuesMs fractions }
        tpotCdf { count }
      }
    }
  }
}
"""
# Tiny: three prompts of 4 tokens, 8 output tokens each, 8 queries in SingleStream.
OPTIONS = {
    "engine": "transformers",
    "model": "tiny-llama",
    "prompts": 3,
    "inputTokens": "4",
    "outputTokens": "8",
    "minDurationS": 0.3,
    "minQueryCount": 8,
}


@pytest.fixture(scope="module")
def gen_stack() -> Iterator[EphemeralStack]:
    yield from running_stack(EphemeralStack())


@pytest.fixture(scope="module")
def client(gen_stack: EphemeralStack) -> GraphQLClient:
    from services.api.auth import create_token
    from shared.db.session import session_scope

    with session_scope(gen_stack.database_url) as session:
        token = create_token(session, user_name="generative-author", label="test")
    return GraphQLClient(gen_stack.api_url, token)


def _csv_row(stack: EphemeralStack, run_id: str, table: Path) -> dict[str, str]:
    """`benchstack report RUN --csv` on the stack's database and store (the local path)."""
    env = {**os.environ, **stack.env(), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("BENCHSTACK_API_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "report", run_id, "--csv", str(table)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with table.open(newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    return row


def _measured(client: GraphQLClient, options: dict[str, Any]) -> tuple[str, str]:
    """(evaluation id, run id) of a generative evaluation submitted and SUCCEEDED."""
    given = {"model": "resnet18", "framework": "null", "generative": options}
    created = client(SUBMIT, {"input": given})["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    evaluation = client.until_final(RESULT, created["id"], timeout_s=180)
    assert evaluation["state"] == "SUCCEEDED", evaluation
    return created["id"], evaluation["runs"][0]["id"]


@pytest.fixture(scope="module")
def measured(client: GraphQLClient) -> tuple[str, str]:
    return _measured(client, OPTIONS)


def test_a_generative_run_through_the_stack_graphql_csv_and_run_page(
    gen_stack: EphemeralStack,
    client: GraphQLClient,
    measured: tuple[str, str],
    browser: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    created = {"id": measured[0]}
    run_id = measured[1]

    (run,) = client(GENERATIVE, {"id": created["id"]})["evaluation"]["runs"]
    generative = run["generative"]
    figures = {f["name"]: f for f in generative["figures"]}
    assert figures["output_tokens_per_s"]["estimate"] > 0
    assert figures["output_tokens_per_s"]["unit"] == "tokens/s"
    # LoadGen's own TTFT beside ours; an interval or the reason there is none.
    ttft = figures["ttft_p50"]
    assert ttft["loadgen"] is not None and ttft["estimate"] > 0
    assert (ttft["low"] is not None) or ttft["intervalReason"]
    assert generative["requests"]["completed"] >= 8 and generative["requests"]["failed"] == 0
    assert generative["requests"]["outputTokens"] == 8 * generative["requests"]["completed"]
    assert generative["validity"] in {"VALID", "INVALID"}
    cdf = generative["ttftCdf"]
    assert cdf["count"] == generative["requests"]["completed"]
    assert cdf["valuesMs"] == sorted(cdf["valuesMs"]) and cdf["fractions"][-1] == 1.0
    assert {"key": "engine", "value": "transformers"} in generative["settings"]

    row = _csv_row(gen_stack, run_id, tmp_path / "runs.csv")
    assert float(row["generative.output_tokens_per_s"]) == pytest.approx(
        figures["output_tokens_per_s"]["estimate"]
    )
    assert row["generative.validity"] == generative["validity"]
    assert "generative.ttft_p50_low" in row and "generative.tpot_p99" in row

    for page in watched_page(browser, gen_stack.api_url):
        sign_in(page, str(client.token))
        page.goto(f"/#/evaluations/{created['id']}")
        section = page.locator('[data-workload="generative"]')
        expect(section.locator("#generative-figures-title")).to_have_text("Token figures")
        shown = section.locator('[data-metric="output_tokens_per_s"]')
        expect(shown).to_contain_text("Output tokens/s")
        expect(section.locator('[data-setting="engine"]')).to_have_text("transformers")
        expect(section.locator("#generative-verdict-title")).to_contain_text(generative["validity"])
        for chart in ("generative-ttft-cdf", "generative-tpot-cdf"):
            expect(section.locator(f'[data-chart="{chart}"]')).to_have_attribute(
                "data-rendered", "yes"
            )
        expect(page.locator("#headline-title")).to_have_count(0)


def test_two_generative_runs_compared_with_the_differing_setting_marked(
    gen_stack: EphemeralStack, client: GraphQLClient, measured: tuple[str, str], browser: Any
) -> None:
    from playwright.sync_api import expect

    other, _ = _measured(client, OPTIONS | {"outputTokens": "4"})
    for page in watched_page(browser, gen_stack.api_url):
        sign_in(page, str(client.token))
        page.goto(f"/#/compare?ids={measured[0]},{other}")
        # The settings its module states, the one that differs marked.
        differing = page.locator('tr[data-setting="Output tokens"]')
        expect(differing).to_have_attribute("data-differs", "yes")
        expect(differing.locator("td")).to_have_text(["8", "4"])
        expect(page.locator('tr[data-setting="Engine"]')).to_have_attribute("data-differs", "no")
        # Its own figures card, not LoadGen's, with the intervals' chart drawn.
        card = page.locator('[data-workload="generative"]')
        expect(card.locator('tr[data-metric="output_tokens_per_s"] td')).to_have_count(2)
        chart = card.locator('[data-chart="generative-compare-tokens"]')
        expect(chart).to_have_attribute("data-rendered", "yes")
        expect(page.locator("#figures-title")).to_have_count(0)


@pytest.fixture(scope="module")
def endpoint_agents(gen_stack: EphemeralStack, client: GraphQLClient) -> Iterator[list[str]]:
    """Two more agents (1 and 2 threads), each serving its own OpenAI-compatible endpoint
    (BENCHSTACK_AGENT_ENDPOINT_URL): the endpoints' urls."""
    with ExitStack() as servers:
        urls = [servers.enter_context(streaming_server()).url for _ in range(2)]  # type: ignore[attr-defined]
        specs = [
            ServiceSpec(
                f"endpoint-{n}",
                [
                    "env",
                    f"BENCHSTACK_AGENT_ENDPOINT_URL={url}",
                    "BENCHSTACK_AGENT_ENDPOINT_MODEL=tiny",
                    sys.executable,
                    "-m",
                    ENTRY_MODULE,
                    "worker",
                    "inference",
                    "--framework",
                    "null",
                    "--threads",
                    str(n),
                ],
            )
            for n, url in ((1, urls[0]), (2, urls[1]))
        ]
        extra = gen_stack.start_services(specs, name="endpoints", wait_api=False)
        try:
            deadline = time.monotonic() + 60
            while len(_endpoints(client)) < 2:
                assert time.monotonic() < deadline, gen_stack.logs()
                time.sleep(0.3)
            yield urls
        finally:
            extra.stop(grace_s=10)


def _endpoints(client: GraphQLClient) -> set[str]:
    agents = client("{ agents { settings } }")["agents"]
    return {a["settings"]["endpoint_url"] for a in agents if a["settings"].get("endpoint_url")}


SUBMIT_FAN_OUT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Comparison { id } ... on UserError { message field }
  }
}
"""
FAN_OUT = """
query($g: String!) { compare(groupId: $g) { done rows { state workloadSettings workloadFigures } } }
"""


def test_a_fan_out_of_two_endpoints_is_compared_with_the_endpoint_marked(
    gen_stack: EphemeralStack, client: GraphQLClient, endpoint_agents: list[str], browser: Any
) -> None:
    from playwright.sync_api import expect

    options = {"engine": "openai", "prompts": 2, "inputTokens": "4", "outputTokens": "3",
               "minDurationS": 0.2, "minQueryCount": 4}  # fmt: skip
    given = {"model": "resnet18", "framework": "null", "generative": options, "fanOut": True,
             "constraints": {"require": ["threads>=1"]}}  # fmt: skip
    fanned = client(SUBMIT_FAN_OUT, {"input": given})["submitEvaluation"]
    assert fanned["__typename"] == "Comparison", fanned
    group_id = fanned["id"]
    deadline = time.monotonic() + 120
    while not (found := client(FAN_OUT, {"g": group_id})["compare"])["done"]:
        assert time.monotonic() < deadline, found
        time.sleep(0.5)
    assert [r["state"] for r in found["rows"]] == ["SUCCEEDED", "SUCCEEDED"], found
    # In the comparison's row order (the agents as matched), which the page's columns keep.
    urls = [s[4:] for r in found["rows"] for s in r["workloadSettings"] if s.startswith("url=")]
    assert sorted(urls) == sorted(endpoint_agents)
    assert all(r["workloadFigures"][0].startswith("Output tokens/s: ") for r in found["rows"])
    for page in watched_page(browser, gen_stack.api_url):
        sign_in(page, str(client.token))
        page.goto(f"/#/compare?group={group_id}")
        endpoint = page.locator('tr[data-setting="Endpoint"]')
        expect(endpoint).to_have_attribute("data-differs", "yes")
        expect(endpoint.locator("td")).to_have_text(urls, ignore_case=False)
