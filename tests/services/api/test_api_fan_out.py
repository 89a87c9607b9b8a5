"""Fan-out and constraint terms through GraphQL, over SQLite with a recording publisher."""

from __future__ import annotations

from collections.abc import Callable

from shared.db import evaluation_repo
from shared.db.session import session_scope
from tests.services.api.conftest import Api

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Comparison { id done rows { evaluationId state agentId threads arch } }
    ... on Evaluation { id }
    ... on UserError { message field }
  }
}
"""
COMPARE = "query($id: String!) { compare(groupId: $id) { id rows { agentId threads } } }"


def add_worker(api: Api, pid: int, threads: int, gpus: list[str] | None = None) -> str:
    agent_id = f"box/inference.null.cpu/{pid}"
    with session_scope(api.settings.effective_database_url) as session:
        evaluation_repo.upsert_agent(
            session,
            agent_id=agent_id,
            hostname="box",
            queue="inference.null.cpu",
            framework="null",
            framework_version="0.1.0",
            device="cpu",
            hardware={
                "cpu": {"architecture": "x86_64", "logical_cores": 2},
                "memory_bytes": 8 * 2**30,
                "gpus": [{"name": g} for g in gpus or []],
            },
            software={},
            settings={"intra_op_threads": threads},
            direct_queue=f"inference.null.cpu@box/{pid}",
        )
    return agent_id


def test_fan_out_makes_one_pinned_evaluation_per_matching_agent(api: Api) -> None:
    one, two = add_worker(api, 1, threads=1), add_worker(api, 2, threads=2)
    add_worker(api, 3, threads=0)  # no thread setting: left out by threads>=1
    token = api.token("alice")
    constraints = {"require": ["threads>=1", "arch=x86_64"]}
    result = api.data(
        token, SUBMIT, {"input": {**QUICK, "constraints": constraints, "fanOut": True}}
    )
    comparison = result["submitEvaluation"]
    assert comparison["__typename"] == "Comparison", comparison
    assert {(r["agentId"], r["threads"]) for r in comparison["rows"]} == {(one, 1), (two, 2)}
    assert {r["state"] for r in comparison["rows"]} == {"QUEUED"} and not comparison["done"]
    # One plan message for the group: the scheduler plans its members together.
    members = {r["evaluationId"] for r in comparison["rows"]}
    assert len(api.publisher.sent) == 1 and api.publisher.sent[0][1]["evaluation_id"] in members
    again = api.data(token, COMPARE, {"id": comparison["id"]})["compare"]
    assert sorted(r["threads"] for r in again["rows"]) == [1, 2]
    # Someone else's comparison is indistinguishable from a missing one.
    assert api.data(api.token("bob"), COMPARE, {"id": comparison["id"]})["compare"] is None


def test_unmet_and_malformed_terms_are_typed(api: Api, submit_query: Callable[[], str]) -> None:
    add_worker(api, 1, threads=1)
    token = api.token("alice")
    cases = [
        (["gpu"], "NoMatchingAgent", "gpu", "'gpu'"),
        (["threads=8"], "NoMatchingAgent", "threads", "'threads=8'"),
        (["memory>=1TiB"], "NoMatchingAgent", "memory", "8.0 GiB"),
        (["null<0.0.1"], "NoMatchingAgent", "frameworkVersion", "null 0.1.0"),
        (["gpu", "ram>=4"], "InvalidInput", "constraints.require[1]", "unknown key"),
        (["torch>=2"], "InvalidInput", "constraints.require", "names framework 'torch'"),
    ]
    for terms, typename, field, fragment in cases:
        input_ = {**QUICK, "constraints": {"require": terms}}
        result = api.data(token, submit_query(), {"input": input_})["submitEvaluation"]
        assert (result["__typename"], result["field"]) == (typename, field), result
        assert fragment in result["message"], result
    assert api.publisher.sent == []


def test_a_gpu_agent_is_chosen_by_its_gpu(api: Api) -> None:
    add_worker(api, 1, threads=1)
    gpu = add_worker(api, 2, threads=1, gpus=["NVIDIA H100 80GB HBM3"])
    token = api.token("alice")
    constraints = {"require": ["gpu=h100"]}
    result = api.data(
        token, SUBMIT, {"input": {**QUICK, "constraints": constraints, "fanOut": True}}
    )
    rows = result["submitEvaluation"]["rows"]
    assert [r["agentId"] for r in rows] == [gpu]
