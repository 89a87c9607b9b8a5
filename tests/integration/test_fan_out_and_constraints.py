"""Agents routed by constraints, and a fan-out that comes back as one comparison.

Two more inference workers join the session's stack, the same backends with different
settings (1 and 2 intra-op threads), as two machines of a fleet would.
"""

from __future__ import annotations

import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from shared.environment import gpu_info
from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Evaluation { id state groupId }
    ... on Comparison { id done rows { evaluationId state agentId threads } }
    ... on UserError { message field }
  }
}
"""
COMPARE = """
query($id: String!) {
  compare(groupId: $id) {
    id model scenario done
    rows { evaluationId state reason agentId hostname arch logicalCores memoryGib gpus
           framework frameworkVersion device threads samplesPerSecond latencyP50Ms
           latencyP90Ms latencyP99Ms validity stability overlapped hostBusy
           samplesPerSecondLow samplesPerSecondHigh }
  }
}
"""
EVALUATION = """
query($id: String!) { evaluation(id: $id) { state reason agentId runs { report } } }
"""
QUICK = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.3, "targetQps": 2000},
    "samples": 16,
}
# The two threaded workers are the only agents with a thread setting: threads>=1 picks both.
THREADED = {"require": ["threads>=1"]}


def _wait(client: GraphQLClient, group_id: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        comparison: dict[str, Any] = client(COMPARE, {"id": group_id})["compare"]
        if comparison["done"] or time.monotonic() > deadline:
            return comparison
        time.sleep(0.3)


def _finish(client: GraphQLClient, evaluation_id: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        evaluation: dict[str, Any] = client(EVALUATION, {"id": evaluation_id})["evaluation"]
        if evaluation["state"] in {"SUCCEEDED", "FAILED", "CANCELLED"}:
            return evaluation
        assert time.monotonic() < deadline, evaluation
        time.sleep(0.3)


def test_fan_out_over_two_agents_returns_one_comparison(
    stack: EphemeralStack, fleet: GraphQLClient, tmp_path: Path
) -> None:
    created = fleet(SUBMIT, {"input": {**QUICK, "constraints": THREADED, "fanOut": True}})
    created = created["submitEvaluation"]
    assert created["__typename"] == "Comparison", created
    assert len(created["rows"]) == 2 and len({r["agentId"] for r in created["rows"]}) == 2
    comparison = _wait(fleet, created["id"])
    assert comparison["done"], comparison
    rows = comparison["rows"]
    assert [r["state"] for r in rows] == ["SUCCEEDED", "SUCCEEDED"], rows
    assert sorted(r["threads"] for r in rows) == [1, 2]
    for row in rows:
        # Offline: its latencies are queue positions, never a figure (the one rule).
        assert row["samplesPerSecond"] > 0 and row["latencyP90Ms"] is None
        assert row["validity"] in {"VALID", "INVALID"}
        assert row["stability"] in {"STABLE", "UNSTABLE", "INSUFFICIENT"}
        assert row["framework"] == "null" and row["frameworkVersion"]
        assert row["hostname"] and row["arch"] and row["logicalCores"]
    # The thread setting is recorded with each run, as the agent applied it.
    for row in rows:
        run = fleet(EVALUATION, {"id": row["evaluationId"]})["evaluation"]["runs"][0]
        assert run["report"]["settings"]["backend_options"]["intra_op_threads"] == row["threads"]
        # Both agents share this host: their measurements took turns.
        assert run["report"]["host"]["exclusive"] is True
        assert run["report"]["host"]["overlapped"] is False, run["report"]["host"]
        assert run["report"]["agent"]["backend_options"]["intra_op_threads"] == row["threads"]
        assert run["report"]["group"]["id"] == created["id"]
    assert [r["overlapped"] for r in rows] == [False, False]
    # The same comparison as a CLI table.
    from services.cli.main import app

    table = tmp_path / "comparison.csv"
    result = CliRunner().invoke(
        app,
        [
            "compare", created["id"], "--server", stack.api_url, "--token", str(fleet.token),
            "--csv", str(table),
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "samples/s" in result.output and "VALID" in result.output
    assert all(r["agentId"] in result.output for r in rows), result.output
    # The pair is judged figure by figure: they differ beyond their intervals, or not, or
    # the reason none can be said (an interval missing) is given.
    verdicts = [line for line in result.output.splitlines() if " vs " in line]
    assert verdicts, result.output
    assert all(
        any(v in line for v in ("differ", "within their intervals", "cannot say"))
        for line in verdicts
    ), verdicts
    # The CSV holds one line per agent with the figures the API gave.
    import csv

    with table.open(newline="") as fh:
        written = list(csv.DictReader(fh))
    assert f"wrote 2 rows to {table}" in result.output
    assert sorted(r["agent"] for r in written) == sorted(r["agentId"] for r in rows)
    by_agent = {r["agentId"]: r for r in rows}
    for line in written:
        row = by_agent[line["agent"]]
        assert line["group_id"] == created["id"] and line["validity"] == row["validity"]
        assert float(line["samples_per_second"]) == pytest.approx(row["samplesPerSecond"])
        assert int(line["threads"]) == row["threads"]
        # The machine: the agent's host and queue, the same across the agent's restarts.
        assert line["machine"] == line["agent"].rsplit("/", 1)[0], line
    _check_shared_report(stack, fleet, created["id"], rows, tmp_path)
    # The samples/s verdict follows from the intervals and validity the CSV holds: a run
    # LoadGen did not judge VALID gets no verdict whatever its interval (CI's loaded host
    # once left one of these short runs INVALID).
    (throughput,) = [line for line in verdicts if "samples" in line.split(":")[0]]
    bounds = [(line["samples_per_second_low"], line["samples_per_second_high"]) for line in written]
    unjudged = [line["validity"] for line in written if line["validity"] != "VALID"]
    if unjudged:
        assert f"cannot say ({unjudged[0]}: LoadGen did not judge it)" in throughput, throughput
    elif all(low and high for low, high in bounds):
        (low_a, high_a), (low_b, high_b) = [(float(lo), float(hi)) for lo, hi in bounds]
        apart = high_a < low_b or high_b < low_a
        assert ("differ" in throughput) == apart, (throughput, bounds)
    else:
        assert "cannot say" in throughput, (throughput, bounds)


def test_a_thread_constraint_routes_to_the_matching_worker_only(fleet: GraphQLClient) -> None:
    created = fleet(
        SUBMIT, {"input": {**QUICK, "seed": 7, "constraints": {"require": ["threads=2"]}}}
    )
    created = created["submitEvaluation"]
    assert created["__typename"] == "Evaluation" and created["groupId"] is None, created
    evaluation = _finish(fleet, created["id"])
    assert evaluation["state"] == "SUCCEEDED", evaluation
    assert evaluation["runs"][0]["report"]["settings"]["backend_options"]["intra_op_threads"] == 2


def test_a_manifest_requiring_old_onnxruntime_is_refused_naming_it(fleet: GraphQLClient) -> None:
    manifest = (
        (FIXTURES / "tiny_cnn.yaml")
        .read_text()
        .replace("name: tiny-cnn", "name: old-ort-cnn")
        .replace(
            'framework: {name: torch, version: ">=2.0"}',
            'framework: {name: onnxruntime, version: "<1.0"}',
        )
    )
    count = "{ evaluations { totalCount } }"
    before = fleet(count)["evaluations"]["totalCount"]
    result = fleet(
        SUBMIT, {"input": {**QUICK, "model": None, "framework": None, "manifest": manifest}}
    )
    refused = result["submitEvaluation"]
    assert refused["__typename"] == "NoMatchingAgent", refused
    assert refused["field"] == "frameworkVersion"
    assert "'onnxruntime<1.0'" in refused["message"]
    assert "old-ort-cnn:0.1.0" in refused["message"]
    assert metadata.version("onnxruntime") in refused["message"]  # what the agents have
    assert fleet(count)["evaluations"]["totalCount"] == before  # nothing was queued


def test_an_unmet_gpu_constraint_is_named(fleet: GraphQLClient) -> None:
    if gpu_info():
        pytest.skip("this machine has a GPU, so 'gpu' is satisfiable here")
    result = fleet(SUBMIT, {"input": {**QUICK, "constraints": {"require": ["arch!=sparc", "gpu"]}}})
    refused = result["submitEvaluation"]
    assert refused["__typename"] == "NoMatchingAgent", refused
    assert refused["field"] == "gpu"
    assert "'gpu'" in refused["message"] and "no GPU" in refused["message"]


def test_a_malformed_constraint_is_invalid_input(fleet: GraphQLClient) -> None:
    result = fleet(SUBMIT, {"input": {**QUICK, "constraints": {"require": ["gpu", "ram>=4"]}}})
    refused = result["submitEvaluation"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == "constraints.require[1]"
    assert "unknown key" in refused["message"] and "memory" in refused["message"]


def _check_shared_report(
    stack: EphemeralStack,
    fleet: GraphQLClient,
    group_id: str,
    rows: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    """`report GROUP --server`: the HTML and CSV name each row's agent and threads, and the
    throughput bars carry the stored intervals as error bars."""
    import csv
    import html
    import json
    import re

    from services.cli.main import app

    page, table = tmp_path / "fan-out.html", tmp_path / "fan-out-report.csv"
    argv = ["report", group_id, "--server", stack.api_url, "--token", str(fleet.token)]
    result = CliRunner().invoke(app, [*argv, "--html", str(page), "--csv", str(table)])
    assert result.exit_code == 0, result.output
    with table.open(newline="") as fh:
        written = {line["agent"]: line for line in csv.DictReader(fh)}
    assert sorted(written) == sorted(r["agentId"] for r in rows)
    for row in rows:
        assert int(written[row["agentId"]]["threads"]) == row["threads"]
    text = page.read_text(encoding="utf-8")
    found = re.search(r"const charts = (\[.*?\]);\n", text)
    assert found, text[-2000:]
    charts = {c["id"]: c for c in json.loads(found.group(1).replace("<\\/", "</"))}
    bars = charts["throughput"]["data"][0]
    by_label = {label: i for i, label in enumerate(bars["x"])}
    for row in rows:
        # The bar's label names the agent and the threads that set it apart.
        (label,) = [x for x in by_label if x.startswith(row["agentId"])]
        assert f"threads={row['threads']}" in label, label
        assert html.escape(row["agentId"]) in text and html.escape(label) in text
        i = by_label[label]
        value, plus, minus = (
            bars["y"][i],
            bars["error_y"]["array"][i],
            bars["error_y"]["arrayminus"][i],
        )
        assert value == pytest.approx(row["samplesPerSecond"])
        if row["samplesPerSecondHigh"] is not None:
            assert value + plus == pytest.approx(row["samplesPerSecondHigh"])
            assert value - minus == pytest.approx(row["samplesPerSecondLow"])
        else:
            assert plus is None and minus is None
