"""`benchstack advise --server URL --measure` on a stack with two priced agents: it runs
find-peak through the service on every agent without a result for the bound, waits for
the searches, and then advises from their stored probes: QPS and cost per million per
agent, and the cheapest one meeting the bound."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from typer.testing import CliRunner

from services.stack.manager import ENTRY_MODULE, ServiceSpec
from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack

pytestmark = pytest.mark.integration

PRICES = {"cheap": 0.5, "dear": 4.0}
# Both agents run on this host: each declares its machine (BENCHSTACK_AGENT_MACHINE).
MACHINES = {price: f"{name}-machine" for name, price in PRICES.items()}


def _priced(client: GraphQLClient) -> dict[float, str]:
    agents = client("{ agents { id framework settings } }")["agents"]
    return {
        a["settings"]["price_per_hour"]: a["id"]
        for a in agents
        if a["framework"] == "null" and a["settings"].get("price_per_hour")
    }


@pytest.fixture(scope="module")
def priced_agents(
    stack: EphemeralStack, client_for: Callable[[str], GraphQLClient]
) -> Iterator[dict[float, str]]:
    """Two null inference workers beside the session's, declaring different prices."""
    started = []
    saved = dict(stack.extra_env)
    try:
        for name, price in PRICES.items():
            stack.extra_env = {
                **saved,
                "BENCHSTACK_AGENT_PRICE_PER_HOUR": str(price),
                "BENCHSTACK_AGENT_MACHINE": MACHINES[price],
            }
            argv = [
                sys.executable,
                "-m",
                ENTRY_MODULE,
                "worker",
                "inference",
                "--framework",
                "null",
            ]
            started.append(
                stack.start_services([ServiceSpec(f"inference-{name}", argv)], name=name)
            )
    finally:
        stack.extra_env = saved
    client = client_for("priced-owner")
    try:
        deadline = time.monotonic() + 60
        while set(_priced(client)) != set(PRICES.values()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"priced workers did not register:\n{stack.logs()}")
            time.sleep(0.3)
        # Each API process keeps its own agents list a moment
        # (api_shared_reads_cache_seconds, 1 s): one that answered before the agents
        # registered may still hold the older list, so wait that out before using them.
        time.sleep(1.5)
        found = _priced(client)
        assert set(found) == set(PRICES.values()), found
        yield found
    finally:
        for group in started:
            group.stop(grace_s=10)


def test_advise_measures_the_missing_agents_then_names_the_cheaper_one(
    stack: EphemeralStack,
    priced_agents: dict[float, str],
    make_token: Callable[[str], str],
) -> None:
    from services.cli.main import app

    token = make_token("olga-advise")
    argv = ["advise", "resnet18", "--latency-bound-ms", "50", "--server", stack.api_url]
    argv += ["--token", token, "--framework", "null"]
    # Before: no find-peak result for this user, and the advice says how to get one.
    before = CliRunner().invoke(app, [*argv, "--json"])
    assert before.exit_code == 0, before.output
    assert json.loads(before.stdout)["cheapest"] is None
    measured = CliRunner().invoke(
        app,
        [
            *argv,
            "--measure",
            "--start-qps",
            "200",
            "--duration",
            "1",
            "--max-probes",
            "1",
            "--json",
        ],
        env={"COLUMNS": "200"},
    )
    assert measured.exit_code == 0, measured.output
    for agent_id in priced_agents.values():
        assert f"find-peak on {agent_id}" in measured.stderr
        assert f"{agent_id}: probe 200.0 QPS" in measured.stderr
    advice = json.loads(measured.stdout)
    systems = {s["machine"]: s for s in advice["systems"]}
    cheap, dear = systems[MACHINES[0.5]], systems[MACHINES[4.0]]
    for system, price in ((cheap, 0.5), (dear, 4.0)):
        assert system["status"] != "no find-peak result", system
        assert system["price_per_hour"] == price
    meeting = [s for s in (cheap, dear) if s["status"] == "meets the bound"]
    for system in meeting:
        per_million = system["price_per_hour"] / (system["qps"] * 3600) * 1e6
        assert system["cost_per_million"] == pytest.approx(per_million)
    if meeting:
        best = min(meeting, key=lambda s: s["cost_per_million"])
        assert advice["cheapest"] == best["system"], advice
    # A second --measure searches again only where there is no valid peak yet.
    met = {s["machine"] for s in advice["systems"] if s["status"] == "meets the bound"}
    again = CliRunner().invoke(
        app, [*argv, "--measure", "--start-qps", "200", "--duration", "1", "--max-probes", "1"]
    )
    assert again.exit_code == 0, again.output
    searched = {
        line.removeprefix("find-peak on ").split(":")[0]
        for line in again.stderr.splitlines()
        if line.startswith("find-peak on ")
    }
    machine_of_agent = {agent: MACHINES[price] for price, agent in priced_agents.items()}
    searched_machines = {machine_of_agent.get(agent, agent) for agent in searched}
    assert searched_machines.isdisjoint(met), (searched, met)
    unmet = {a for a, machine in machine_of_agent.items() if machine not in met}
    assert unmet <= searched, (searched, met)
    if not searched:
        assert "every live null agent has a valid peak for this bound" in again.stderr


def test_measure_without_a_server_is_refused_with_the_option_named() -> None:
    from services.cli.main import app

    result = CliRunner().invoke(
        app, ["advise", "resnet18", "--latency-bound-ms", "50", "--measure"]
    )
    assert result.exit_code == 1
    assert "--measure: runs find-peak on a stack's agents; give --server URL" in result.output
