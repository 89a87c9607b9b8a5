"""The schema's workload fields come from the registry: each workload's declared options
input is a field of submitEvaluation's input that submits that kind, and its declared
result type is a field of Run, filled from the run's stored report."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from services.api.graphql import workload_fields
from services.api.schema import schema
from services.core.workload import Workload
from services.workloads import workload_named, workloads
from shared.db.models import Run
from shared.db.session import session_scope
from tests.services.api.conftest import Api
from tests.services.workloads.training.test_graphql_types import report as training_report

EVALUATION = """
query($id: String!) {
  evaluation(id: $id) {
    workload workloadOptions
    runs { training { statistics { steps } settings { key value } } }
  }
}
"""


def _fields(type_name: str) -> set[str]:
    found = schema._schema.type_map[type_name]
    return set(found.fields)  # type: ignore[attr-defined]


def test_each_declared_input_and_result_is_a_field_and_no_other() -> None:
    declared = workloads().values()
    inputs = {w.options_field for w in declared if w.graphql_options_input}
    results = {w.name for w in declared if w.graphql_result}
    assert inputs and results  # training and bricks declare theirs
    submit = _fields("SubmitEvaluationInput")
    assert inputs <= submit
    undeclared = {w.options_field for w in declared if not w.graphql_options_input}
    assert not (undeclared - {"workloadOptions"}) & submit
    assert results <= _fields("Run")
    assert not {w.name for w in declared if not w.graphql_result} & _fields("Run")


def test_a_typed_input_submits_its_workload_with_its_options(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent("torch", version="2.5.0")
    alice = api.token("alice")
    given = {"model": "resnet18", "framework": "torch", "batchSize": 4}
    training = {"steps": 5, "warmup": 1, "imageSize": 32}
    created = api.data(alice, submit_query(), {"input": {**given, "training": training}})
    evaluation = api.data(alice, EVALUATION, {"id": created["submitEvaluation"]["id"]})
    assert evaluation["evaluation"]["workload"] == "training"
    assert evaluation["evaluation"]["workloadOptions"]["steps"] == 5
    bricks = {**given, "batchSize": 1, "bricks": {"granularity": 2}}
    created = api.data(alice, submit_query(), {"input": bricks})["submitEvaluation"]
    assert api.data(alice, EVALUATION, {"id": created["id"]})["evaluation"]["workload"] == (
        "bricks"
    )
    refused = {**given, "training": {**training, "steps": 0}}
    answer = api.data(alice, submit_query(), {"input": refused})["submitEvaluation"]
    assert answer["__typename"] == "InvalidInput" and answer["field"] == "training.steps"


def test_a_run_shows_its_workloads_result_from_its_stored_report(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent("torch", version="2.5.0")
    alice = api.token("alice")
    given = {"model": "resnet18", "framework": "torch", "training": {"steps": 30}}
    created = api.data(alice, submit_query(), {"input": given})["submitEvaluation"]
    with session_scope(api.settings.effective_database_url) as session:
        session.add(
            Run(
                id=str(uuid.uuid4()),
                evaluation_id=created["id"],
                model_name="resnet18",
                model_version="1.0.0",
                framework="torch",
                framework_version="2",
                scenario="training",
                batch_size=4,
                dataset="synthetic",
                validity="MEASURED",
                manifest={},
                settings={},
                environment={},
                report=training_report(),
                log_prefix="",
            )
        )
    (run,) = api.data(alice, EVALUATION, {"id": created["id"]})["evaluation"]["runs"]
    assert run["training"]["statistics"]["steps"] == 30
    assert {"key": "image_size", "value": "64"} in run["training"]["settings"]


def test_a_typed_input_needs_an_options_field_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    training = workload_named("training")
    shared_field = Workload(
        **{**training.__dict__, "name": "echo", "options_field": "workloadOptions"}
    )
    monkeypatch.setattr(workload_fields, "workloads", lambda: {"echo": shared_field})
    workload_fields.option_inputs.cache_clear()
    try:
        with pytest.raises(ValueError, match="'echo': a typed options input needs"):
            workload_fields.option_inputs()
    finally:
        workload_fields.option_inputs.cache_clear()
