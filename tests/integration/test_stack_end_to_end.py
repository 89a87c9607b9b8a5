"""The whole stack over HTTP: token -> submit -> subscription -> metrics, shard reuse,
typed rejections with nothing enqueued, per-user visibility, and a late worker."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from services.stack.manager import ENTRY_MODULE, ServiceSpec
from tests.integration.conftest import GraphQLClient
from tests.support.ephemeral import EphemeralStack

pytestmark = pytest.mark.integration

SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Evaluation { id state }
    ... on UserError { message field }
  }
}
"""
EVALUATION = """
query($id: String!) {
  evaluation(id: $id) {
    id state reason preprocessReused shardsTotal shardsReady
    runs { id validity samplesPerSecond preprocessReused
           metrics { name value unit } logs { name url } }
  }
}
"""
CANCEL = """
mutation($id: String!) {
  cancelEvaluation(id: $id) { __typename ... on UserError { message field } }
}
"""

# Tiny and quick: the null backend, 16 synthetic images (two shards of 8), 0.3 s of LoadGen.
QUICK = {
    "model": "resnet18",
    "framework": "null",
    "scenario": "offline",
    "settings": {"minDurationS": 0.3, "targetQps": 2000},
    "samples": 16,
}


def submit(client: GraphQLClient, **overrides: Any) -> dict[str, Any]:
    result: dict[str, Any] = client(SUBMIT, {"input": {**QUICK, **overrides}})["submitEvaluation"]
    return result


def published(stack: EphemeralStack) -> float:
    """Messages the API has published so far (its Prometheus counter)."""
    text = httpx.get(stack.api_url + "/metrics", timeout=10).text
    values = re.findall(r"^benchstack_messages_published_total\{[^}]*\} (\S+)$", text, re.M)
    return sum(float(v) for v in values)


def test_submit_follow_and_read_metrics(client_for: Callable[[str], GraphQLClient]) -> None:
    alice = client_for("alice")
    created = submit(alice, seed=101)
    assert created["__typename"] == "Evaluation", created
    updates = alice.follow(created["id"])
    states = [u["state"] for u in updates]
    assert states[-1] == "SUCCEEDED", updates
    assert "PREPROCESSING" in states or "RUNNING" in states
    evaluation = alice(EVALUATION, {"id": created["id"]})["evaluation"]
    assert evaluation["shardsTotal"] == 2 and evaluation["shardsReady"] == 2
    assert evaluation["preprocessReused"] is False
    (run,) = evaluation["runs"]
    metrics = {m["name"]: m for m in run["metrics"]}
    assert metrics["samples_per_second"]["value"] > 0
    assert metrics["latency_p90"]["unit"] == "ms"
    assert run["validity"] in {"VALID", "INVALID"}
    summary = next(link for link in run["logs"] if link["name"] == "mlperf_log_summary.txt")
    response = httpx.get(
        alice.base_url + summary["url"],
        headers={"Authorization": f"Bearer {alice.token}"},
        timeout=10,
    )
    assert response.status_code == 200 and b"Scenario" in response.content


def test_second_evaluation_reuses_shards(client_for: Callable[[str], GraphQLClient]) -> None:
    bob = client_for("bob-reuse")
    first = submit(bob, seed=202)
    assert bob.follow(first["id"])[-1]["state"] == "SUCCEEDED"
    second = submit(bob, seed=202, scenario="single-stream", settings={"minDurationS": 0.3})
    assert second["__typename"] == "Evaluation", second
    updates = bob.follow(second["id"])
    assert updates[-1]["state"] == "SUCCEEDED", updates
    evaluation = bob(EVALUATION, {"id": second["id"]})["evaluation"]
    assert evaluation["preprocessReused"] is True
    assert evaluation["runs"][0]["preprocessReused"] is True


def test_a_worker_keeps_the_model_loaded_for_the_next_run_of_it(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    carol = client_for("carol-cache")
    # Options no other test uses: the first run is this model's first load on the worker.
    options = {"service_time_ms": 0.25}
    figures = []
    for batch_size in (1, 2):
        created = submit(carol, seed=303, batchSize=batch_size, backendOptions=options)
        assert carol.follow(created["id"])[-1]["state"] == "SUCCEEDED"
        (run,) = carol(EVALUATION, {"id": created["id"]})["evaluation"]["runs"]
        figures.append({m["name"]: m["value"] for m in run["metrics"]})
    cold, warm = figures
    assert cold["model_kept"] == 0.0 and cold["model_load"] >= 0
    # The second batch size ran on the model the first one loaded: no load figure.
    assert warm["model_kept"] == 1.0 and "model_load" not in warm


@pytest.mark.parametrize(
    ("overrides", "typename", "field"),
    [
        ({"model": "no-such-model"}, "UnknownModel", "model"),
        ({"settings": {"minDurationS": -1}}, "InvalidScenarioSettings", "settings.min_duration_s"),
        ({"settings": {"warpSpeed": 9}}, "InvalidScenarioSettings", "settings.warp_speed"),
        ({"scenario": "batch"}, "InvalidScenarioSettings", "scenario"),
        ({"device": "cuda"}, "NoMatchingAgent", "device"),
        ({"framework": "tensorrt", "device": "cuda"}, "NoMatchingAgent", "framework"),
        ({"framework": "tensorrt"}, "InvalidInput", "device"),  # GPU only: never on cpu
        ({"constraints": {"hostname": "elsewhere"}}, "NoMatchingAgent", "hostname"),
        ({"model": None, "manifest": "name: x\nversion: one\n"}, "InvalidManifest", "manifest"),
        ({"batchSize": 0}, "InvalidInput", "batchSize"),
    ],
)
def test_rejections_are_typed_and_enqueue_nothing(
    stack: EphemeralStack,
    client_for: Callable[[str], GraphQLClient],
    overrides: dict[str, Any],
    typename: str,
    field: str,
) -> None:
    carol = client_for("carol")
    before = published(stack)
    result = submit(carol, **overrides)
    assert result["__typename"] == typename, result
    assert result["field"] == field, result
    assert result["message"]
    assert published(stack) == before
    page = carol("{ evaluations { totalCount } }")["evaluations"]
    assert page["totalCount"] == 0


def test_missing_or_invalid_token_is_401(stack: EphemeralStack) -> None:
    for token in (None, "bst_not-a-real-token", "garbage"):
        response = GraphQLClient(stack.api_url, token).post("{ models { name } }")
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
    # The IDE itself is served without a token; operations are not.
    ide = httpx.get(stack.api_url + "/graphql", headers={"Accept": "text/html"}, timeout=10)
    assert ide.status_code == 200 and "graphiql" in ide.text.lower()


def test_user_cannot_see_or_cancel_anothers_evaluation(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    dave, erin = client_for("dave"), client_for("erin")
    created = submit(dave, seed=303)
    assert erin(EVALUATION, {"id": created["id"]})["evaluation"] is None
    assert all(
        item["id"] != created["id"]
        for item in erin("{ evaluations(first: 200) { items { id } } }")["evaluations"]["items"]
    )
    refused = erin(CANCEL, {"id": created["id"]})["cancelEvaluation"]
    assert refused["__typename"] == "NotFound"
    assert dave.follow(created["id"])[-1]["state"] == "SUCCEEDED"


def test_owner_can_cancel(client_for: Callable[[str], GraphQLClient]) -> None:
    frank = client_for("frank")
    # Long enough to still be running when the cancel arrives.
    created = submit(frank, seed=404, settings={"minDurationS": 3, "targetQps": 2000})
    cancelled = frank(CANCEL, {"id": created["id"]})["cancelEvaluation"]
    assert cancelled["__typename"] == "Evaluation"
    final = frank(EVALUATION, {"id": created["id"]})["evaluation"]
    assert final["state"] == "CANCELLED"
    again = frank(CANCEL, {"id": created["id"]})["cancelEvaluation"]
    assert again["__typename"] == "AlreadyFinished"


def test_worker_started_after_submission_picks_the_work_up(
    stack: EphemeralStack, client_for: Callable[[str], GraphQLClient]
) -> None:
    """An agent whose worker is (re)starting: accepted, queued, then run once it is up."""
    from shared.db import evaluation_repo
    from shared.db.session import session_scope

    with session_scope(stack.database_url) as session:
        # The row a worker on device "cuda" left behind seconds ago (still within its TTL);
        # the null backend ignores the device, so a CPU machine can play that worker.
        evaluation_repo.upsert_agent(
            session,
            agent_id="restarting-host/inference.null.cuda/1",
            hostname="restarting-host",
            queue="inference.null.cuda",
            framework="null",
            framework_version="0.1.0",
            device="cuda",
            hardware={},
            software={},
        )
    grace = client_for("grace")
    created = submit(grace, seed=505, device="cuda")
    assert created["__typename"] == "Evaluation", created
    time.sleep(2.0)
    waiting = grace(EVALUATION, {"id": created["id"]})["evaluation"]
    assert waiting["state"] == "RUNNING"  # shards ready, inference queued, nobody consuming
    late = [sys.executable, "-m", ENTRY_MODULE, "worker", "inference", "--device", "cuda"]
    stack.start_services(
        [ServiceSpec("inference-late-cuda", [*late, "--frameworks", "null"])], name="late"
    )
    assert grace.follow(created["id"])[-1]["state"] == "SUCCEEDED"


RUN_REPORT = """
query($id: String!) { evaluation(id: $id) { state reason runs { id validity report } } }
"""


def _finished(client: GraphQLClient, evaluation_id: str, timeout_s: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        evaluation: dict[str, Any] = client(RUN_REPORT, {"id": evaluation_id})["evaluation"]
        if evaluation["state"] in {"SUCCEEDED", "FAILED", "CANCELLED"}:
            return evaluation
        assert time.monotonic() < deadline, evaluation
        time.sleep(0.2)


def test_a_run_with_failed_samples_is_invalid_through_the_stack(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    grace = client_for("grace")
    created = submit(grace, seed=601, backendOptions={"fail_every": 3})
    evaluation = _finished(grace, created["id"])
    assert evaluation["state"] == "SUCCEEDED", evaluation
    (run,) = evaluation["runs"]
    # Judged where it was measured; the aggregator stored that verdict, not a re-parse.
    assert run["validity"] == "INVALID"
    report = run["report"]
    assert report["failed_samples"] > 0
    assert any("samples failed" in r for r in report["performance"]["validity"]["reasons"])
    assert report["hints"] and "failed" in report["hints"][0]


def test_rerun_of_a_stack_run_reproduces_device_options_threads_and_constraints(
    stack: EphemeralStack, client_for: Callable[[str], GraphQLClient]
) -> None:
    from services.aggregator.repository import get_run
    from services.campaigns.rerun import request_from_run
    from shared.db.session import session_scope

    heidi = client_for("heidi")
    created = submit(
        heidi,
        seed=602,
        backendOptions={"service_time_ms": 1},
        constraints={"require": ["cores>=1"]},
    )
    evaluation = _finished(heidi, created["id"])
    assert evaluation["state"] == "SUCCEEDED", evaluation
    (run,) = evaluation["runs"]
    with session_scope(stack.database_url) as session:
        manifest = get_run(session, run["id"]).manifest
    report = run["report"]
    request, _ = request_from_run(run["id"], report, manifest)
    applied = report["agent"]["backend_options"]["intra_op_threads"]
    assert applied >= 1  # chosen for the scenario: the agent was started with 0
    assert request.device == "cpu"
    assert request.threads == applied
    assert request.backend_options == {"service_time_ms": 1}
    assert request.constraints == {"require": ["cores>=1"]}
    assert request.framework == "null" and request.seed == 602 and request.samples == 16
    # A constraint this machine cannot meet is refused by name, not silently dropped.
    report["settings"]["constraints"] = {"require": ["cores>=100000"]}
    with pytest.raises(ValueError, match="cores>=100000"):
        request_from_run(run["id"], report, manifest)


def test_cancel_ends_the_measurement_and_frees_the_agent(
    stack: EphemeralStack, client_for: Callable[[str], GraphQLClient]
) -> None:
    from shared.db.evaluations import Evaluation
    from shared.db.session import session_scope

    ivan = client_for("ivan")
    # 1 ms a sample for 110,000 samples: without a service time the null backend ends this
    # "long" run in about 2 s, inside the sleep below, and the cancel would find it done.
    long_run = submit(
        ivan,
        seed=603,
        settings={"minDurationS": 50, "targetQps": 2000},
        backendOptions={"service_time_ms": 1},
    )

    def row(evaluation_id: str) -> Evaluation:
        with session_scope(stack.database_url) as session:
            found = session.get(Evaluation, evaluation_id)
            assert found is not None
            session.expunge(found)
            return found

    deadline = time.monotonic() + 60
    while row(long_run["id"]).attempt < 1:  # claimed: the agent is measuring it
        assert time.monotonic() < deadline, row(long_run["id"]).state
        time.sleep(0.2)
    time.sleep(2)  # well inside LoadGen's 50 s
    assert ivan(CANCEL, {"id": long_run["id"]})["cancelEvaluation"]["__typename"] == "Evaluation"
    cancelled_at = time.monotonic()
    following = submit(ivan, seed=604)
    while row(following["id"]).attempt < 1:
        assert time.monotonic() - cancelled_at < 10, "the agent did not take the next run"
        time.sleep(0.1)
    assert _finished(ivan, following["id"])["state"] == "SUCCEEDED"
    assert row(long_run["id"]).state == "CANCELLED"


def test_settings_that_cannot_finish_within_the_run_limit_are_refused(
    client_for: Callable[[str], GraphQLClient],
) -> None:
    judy = client_for("judy")
    refused = submit(judy, settings={"minDurationS": 100000})
    assert refused["__typename"] == "InvalidScenarioSettings", refused
    assert refused["field"] == "settings.min_duration_s"
    assert "MAX_RUN_SECONDS" in refused["message"]


def test_submit_from_the_cli_passes_backend_options_and_prints_the_verdict(
    stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from typer.testing import CliRunner

    from services.cli.main import app

    result = CliRunner().invoke(
        app,
        [
            "submit", "resnet18", "--framework", "null", "-o", "fail_every=3",
            "--settings", '{"min_duration_s": 0.3, "target_qps": 2000}', "--samples", "16",
            "--seed", "605", "--server", stack.api_url, "--token", make_token("kim"),
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "INVALID" in result.output
    assert "likely cause:" in result.output and "failed" in result.output
