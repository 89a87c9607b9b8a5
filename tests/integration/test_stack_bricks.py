"""DLBricks through the stack: a bricks evaluation submitted through GraphQL runs on a
torch agent, its timings land in Postgres keyed by signature and system, a second model
reuses every brick the system has, and GraphQL answers the constructed latency."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.conftest import GraphQLClient

pytestmark = pytest.mark.integration

SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename ... on Evaluation { id } ... on UserError { message field }
  }
}
"""
RESULT = """
query($id: String!) {
  evaluation(id: $id) { state reason runs { validity metrics { name value } } }
}
"""
CONSTRUCTED = """
query($model: String!) {
  constructedLatency(model: $model) {
    model system granularity inputShape layers bricks uniqueBricks missing
    sequentialMs criticalPathMs floorCorrectedMs coldWeightsMs
  }
}
"""
# Small and quick: 32-pixel inputs, a handful of queries per brick.
BRICKS = {"granularity": 1, "imageSize": 32, "queries": 5, "minDurationS": 0.01}


# A model that is in no catalogue, made of the same layer kinds and shapes as resnet18.
RESNET34 = """
name: resnet34-variant
version: 1.0.0
framework: {name: torch}
inputs:
- {modality: tensor, layer_name: input, element_type: float32, shape: [3, 224, 224]}
outputs:
- {modality: classification, layer_name: logits, element_type: float32}
source: {architecture: 'torchvision:resnet34'}
"""


def run_bricks(
    client: GraphQLClient, model: str | None, manifest: str | None = None
) -> dict[str, float]:
    given = {"model": model, "manifest": manifest, "framework": "torch", "bricks": BRICKS}
    created = client(SUBMIT, {"input": given})["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    client.follow(created["id"], timeout_s=300)  # until it ends
    evaluation: dict[str, Any] = client(RESULT, {"id": created["id"]})["evaluation"]
    assert evaluation["state"] == "SUCCEEDED", evaluation
    (run,) = evaluation["runs"]
    assert run["validity"] == "CONSTRUCTED"
    return {m["name"]: m["value"] for m in run["metrics"]}


def test_bricks_are_measured_once_per_system_and_construct_any_model_made_of_them(
    torch_client: GraphQLClient,
) -> None:
    first = run_bricks(torch_client, "resnet18")
    assert first["bricks_measured"] == first["bricks_unique"] > 0
    assert first["bricks_reused"] == 0 and first["bricks_missing"] == 0
    assert first["constructed_sequential"] > 0
    assert first["constructed_critical_path"] <= first["constructed_sequential"]
    # The agent counted each brick's weights and measured its system's memory read: the
    # model's weights read from memory come on top of the bricks' sum.
    assert first["constructed_cold_weights"] > first["constructed_sequential"]

    (answer,) = torch_client(CONSTRUCTED, {"model": "resnet18"})["constructedLatency"]
    assert answer["missing"] == [] and answer["inputShape"] == [1, 3, 32, 32]
    assert answer["sequentialMs"] == pytest.approx(first["constructed_sequential"])
    assert answer["coldWeightsMs"] == pytest.approx(first["constructed_cold_weights"])
    assert answer["uniqueBricks"] == first["bricks_unique"]

    # The same model again: every brick is this system's already; nothing is measured.
    again = run_bricks(torch_client, "resnet18")
    assert again["bricks_measured"] == 0 and again["bricks_reused"] == first["bricks_unique"]
    assert again["constructed_sequential"] == pytest.approx(first["constructed_sequential"])

    # A new model made of resnet18's layers (more blocks of the same shapes) constructs
    # from what resnet18 measured, without running a single new brick.
    deeper = run_bricks(torch_client, None, RESNET34)
    assert deeper["bricks_measured"] == 0 and deeper["bricks_missing"] == 0
    assert deeper["bricks_reused"] == deeper["bricks_unique"] > 0
    assert deeper["layers"] > first["layers"]
    assert deeper["constructed_sequential"] > first["constructed_sequential"]


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"framework": "null"}, "bricks"),
        ({"bricks": {**BRICKS, "granularity": 0}}, "bricks.granularity"),
        ({"bricks": {**BRICKS, "imageSize": 4096}}, "bricks.image_size"),
    ],
)
def test_bricks_options_out_of_range_are_refused_naming_the_field(
    torch_client: GraphQLClient, overrides: dict[str, Any], field: str
) -> None:
    given = {"model": "resnet18", "framework": "torch", "bricks": BRICKS, **overrides}
    refused = torch_client(SUBMIT, {"input": given})["submitEvaluation"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field and field.split(".")[-1] in refused["message"]
