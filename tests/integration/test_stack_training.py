"""A training evaluation through the stack: submitted through GraphQL, routed to a torch
agent, timed there as `benchstack train` times it, stored with its figures."""

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
  evaluation(id: $id) {
    state reason
    runs { validity samplesPerSecond metrics { name value unit } }
  }
}
"""
# Small and quick: 32-pixel inputs, batch 4, 3 measured steps after 1 warm-up step.
TRAINING = {"steps": 3, "warmup": 1, "imageSize": 32, "optimizer": "adam"}


def test_a_training_evaluation_ends_succeeded_with_its_figures(torch_client: GraphQLClient) -> None:
    given = {"model": "resnet18", "framework": "torch", "batchSize": 4, "training": TRAINING}
    created = torch_client(SUBMIT, {"input": given})["submitEvaluation"]
    assert created["__typename"] == "Evaluation", created
    torch_client.follow(created["id"], timeout_s=300)  # until it ends
    evaluation: dict[str, Any] = torch_client(RESULT, {"id": created["id"]})["evaluation"]
    assert evaluation["state"] == "SUCCEEDED", evaluation
    (run,) = evaluation["runs"]
    assert run["validity"] == "MEASURED"
    figures = {m["name"]: (m["value"], m["unit"]) for m in run["metrics"]}
    images_per_second, unit = figures["images_per_second"]
    assert images_per_second > 0 and unit == "images/s"
    assert run["samplesPerSecond"] == pytest.approx(images_per_second)
    assert figures["images_per_second_se"][0] >= 0
    assert figures["steps"][0] == 3  # the warm-up step is not measured
    assert 0 <= figures["data_share"][0] < 1
    assert figures["peak_rss"][0] > 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"framework": "null"}, "training"),
        ({"training": {**TRAINING, "steps": 0}}, "training.steps"),
        ({"training": {**TRAINING, "precision": "fp8"}}, "training.precision"),
        ({"bricks": {"granularity": 1}}, "training"),
    ],
)
def test_training_options_out_of_range_are_refused_naming_the_field(
    torch_client: GraphQLClient, overrides: dict[str, Any], field: str
) -> None:
    given = {"model": "resnet18", "framework": "torch", "training": TRAINING, **overrides}
    refused = torch_client(SUBMIT, {"input": given})["submitEvaluation"]
    assert refused["__typename"] == "InvalidInput", refused
    assert refused["field"] == field, refused
