"""Submissions cannot name server paths, overflow columns, reach other hosts or leak internals.

Every refusal is a typed error naming the field and what it accepts, and nothing is
published; unexpected exceptions reach clients only as a masked message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.api.graphql.evaluations import watcher
from services.core.catalogue import CATALOGUE_DIR
from shared.db.evaluations import Evaluation
from shared.db.session import session_scope
from tests.services.api.conftest import Api

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
SHA = "ab" * 32
SUBMIT = """
mutation($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Evaluation { id dataset }
    ... on UserError { message field }
    ... on InvalidInput { accepted }
    ... on InvalidManifest { problems }
  }
}"""


def file_manifest(path: str = "nets/tiny.onnx", labels: str = "imagenet1k") -> str:
    """resnet18's manifest with a model file instead of a builtin architecture."""
    text = (CATALOGUE_DIR / "resnet18.yaml").read_text()
    text = text.replace("name: resnet18", "name: tiny-net")
    text = text.replace("labels: imagenet1k", f"labels: {json.dumps(labels)}")
    return text.replace(
        "source: {architecture: 'torchvision:resnet18'}",
        f"source: {{file: {{path: {json.dumps(path)}, sha256: {SHA}}}}}",
    )


def submit(api: Api, token: str, **overrides: Any) -> dict[str, Any]:
    result: dict[str, Any] = api.data(token, SUBMIT, {"input": {**QUICK, **overrides}})
    return result["submitEvaluation"]


def stored(api: Api, evaluation_id: str) -> Evaluation:
    with session_scope(api.settings.effective_database_url) as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None
        return row


def assert_nothing_enqueued(api: Api, token: str) -> None:
    assert api.publisher.sent == []
    assert api.data(token, "{ evaluations { totalCount } }")["evaluations"]["totalCount"] == 0


@pytest.mark.parametrize(
    "dataset",
    [
        "/etc",
        "/",
        "../secrets",
        "a/../../b",
        "imagenet/../..",
        "~root",
        "",
        ".",
        # "a\x00b" is refused before any resolver: tests/services/api/test_api_hostile_inputs.py
        "x" * 600,
    ],
)
def test_dataset_outside_the_datasets_folder_is_refused(api: Api, dataset: str) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, dataset=dataset)
    assert (result["__typename"], result["field"]) == ("InvalidInput", "dataset"), result
    assert "synthetic" in result["accepted"] and "synthetic" in result["message"]
    assert_nothing_enqueued(api, token)


def test_threads_asked_for_are_stored_with_the_evaluation(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    asked = submit(api, token, threads=2)
    assert asked["__typename"] == "Evaluation", asked
    assert stored(api, asked["id"]).threads == 2
    assert stored(api, submit(api, token)["id"]).threads is None


def test_dataset_names_resolve_inside_the_datasets_folder(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    synthetic = submit(api, token, dataset="synthetic")
    assert stored(api, synthetic["id"]).dataset == "synthetic"
    (api.settings.datasets_dir / "imagenet" / "val").mkdir(parents=True)
    named = submit(api, token, dataset="imagenet/val")
    assert named["__typename"] == "Evaluation", named
    # Workers read the spec as a path: it names the folder inside datasets_dir.
    expected = api.settings.datasets_dir / "imagenet" / "val"
    assert stored(api, named["id"]).dataset == str(expected)
    assert len(api.publisher.sent) == 2


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"samples": 100_000_000}, "samples"),
        ({"samples": 0}, "samples"),
        ({"batchSize": 4097}, "batchSize"),
        ({"batchSize": 0}, "batchSize"),
        ({"seed": -1}, "seed"),
        ({"threads": 0}, "threads"),
        ({"threads": 257}, "threads"),
        ({"device": "c" * 60}, "device"),
        ({"model": "m" * 300}, "model"),
        ({"version": "1" * 150}, "version"),
    ],
)
def test_values_beyond_their_bounds_are_typed(
    api: Api, overrides: dict[str, Any], field: str
) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, **overrides)
    assert (result["__typename"], result["field"]) == ("InvalidInput", field), result
    assert result["accepted"], result
    assert_nothing_enqueued(api, token)


def test_the_sample_bound_is_a_setting(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    assert submit(api, token, samples=100_000)["__typename"] == "Evaluation"
    api.settings.max_samples = 10
    result = submit(api, token, samples=11)
    assert result["field"] == "samples" and "1 to 10" in result["message"]


@pytest.mark.parametrize(
    ("manifest", "problem"),
    [
        (file_manifest("/etc/passwd"), "source.file.path"),
        (file_manifest("../../etc/shadow"), "source.file.path"),
        (file_manifest("nets/../../x.onnx"), "source.file.path"),
        (file_manifest("~root/.ssh/id_rsa"), "source.file.path"),
        (
            file_manifest().replace(
                f'path: "nets/tiny.onnx", sha256: {SHA}',
                f'url: "file:///etc/passwd", sha256: {SHA}',
            ),
            "source.file.url",
        ),
        (
            file_manifest().replace(
                f'path: "nets/tiny.onnx", sha256: {SHA}',
                f'url: "http://169.254.169.254/latest", sha256: {SHA}',
            ),
            "source.file.url",
        ),
        (file_manifest(labels="/etc/passwd"), "outputs[0].steps[1].labels"),
        (file_manifest(labels="../labels.txt"), "outputs[0].steps[1].labels"),
    ],
)
def test_manifest_paths_outside_the_models_folder_are_refused(
    api: Api, manifest: str, problem: str
) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, model=None, manifest=manifest)
    assert (result["__typename"], result["field"]) == ("InvalidManifest", "manifest"), result
    assert [p.split(":")[0] for p in result["problems"]] == [problem]
    assert "models folder" in result["problems"][0]
    assert_nothing_enqueued(api, token)
    register = """mutation($m: String!) { registerModel(manifest: $m) {
        __typename ... on InvalidManifest { field problems } } }"""
    registered = api.data(token, register, {"m": manifest})["registerModel"]
    assert registered["__typename"] == "InvalidManifest"
    assert registered["problems"][0].startswith(problem)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            # resnet18's normalize moved before its resize
            lambda t: t.replace("- decode: {color_mode: RGB}", "- decode: {}\n  - normalize: {}"),
            "inputs[0].steps[2] (resize): takes an image (uint8, HWC), gets a tensor "
            "(float32, HWC) after normalize",
        ),
        (
            lambda t: t.replace("- layout: {order: NCHW}", "- layout: {}\n  - layout: {}"),
            "inputs[0].steps[5] (layout): takes an image or tensor (HWC) not laid out yet",
        ),
    ],
)
def test_inline_steps_that_cannot_run_are_refused_at_submission(
    api: Api, change: Callable[[str], str], problem: str
) -> None:
    api.add_agent()
    token = api.token("alice")
    manifest = change(file_manifest())
    assert manifest != file_manifest()
    result = submit(api, token, model=None, manifest=manifest)
    assert (result["__typename"], result["field"]) == ("InvalidManifest", "manifest"), result
    assert result["problems"][0].startswith(problem), result["problems"]
    assert_nothing_enqueued(api, token)


def test_relative_model_paths_resolve_inside_the_models_folder(api: Api) -> None:
    api.add_agent()
    token = api.token("alice")
    manifest = file_manifest("nets/tiny.onnx", labels="labels/classes.txt")
    result = submit(api, token, model=None, manifest=manifest)
    assert result["__typename"] == "Evaluation", result
    row = stored(api, result["id"])
    models = api.settings.models_dir
    assert row.manifest["source"]["file"]["path"] == str(models / "nets" / "tiny.onnx")
    assert row.manifest["outputs"][0]["steps"][1]["labels"] == str(models / "labels/classes.txt")
    # Registered manifests are stored as sent and anchored when submitted.
    register = """mutation($m: String!) { registerModel(manifest: $m) { __typename } }"""
    text = manifest.replace("name: tiny-net", "name: tiny-reg")
    assert api.data(token, register, {"m": text})["registerModel"]["__typename"] == "Model"
    by_name = submit(api, token, model="tiny-reg")
    assert by_name["__typename"] == "Evaluation", by_name
    path = stored(api, by_name["id"]).manifest["source"]["file"]["path"]
    assert path == str(models / "nets" / "tiny.onnx")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"url": "attacker.example:80"}, "backendOptions.url"),
        ({"mode": "torchscript"}, "backendOptions.mode"),  # torch's, not null's
        ({"service_time_ms": {"nested": 1}}, "backendOptions.service_time_ms"),
        ({"service_time_ms": "x" * 500}, "backendOptions.service_time_ms"),
        ([1, 2], "backendOptions"),
    ],
)
def test_backend_options_are_checked_per_framework(api: Api, options: Any, field: str) -> None:
    api.add_agent()
    token = api.token("alice")
    result = submit(api, token, backendOptions=options)
    assert (result["__typename"], result["field"]) == ("InvalidInput", field), result
    if field != "backendOptions":
        assert "service_time_ms" in result["message"]
    assert_nothing_enqueued(api, token)


def test_triton_url_is_the_workers_not_the_submitters(api: Api) -> None:
    api.add_agent(framework="triton")
    token = api.token("alice")
    result = submit(
        api,
        token,
        framework="triton",
        backendOptions={"url": "10.0.0.1:8000", "protocol": "grpc"},
    )
    assert (result["__typename"], result["field"]) == ("InvalidInput", "backendOptions.url")
    assert "BENCHSTACK_TRITON_URL" in result["message"] and "protocol" in result["accepted"]
    ok = submit(api, token, framework="triton", backendOptions={"protocol": "grpc"})
    assert ok["__typename"] == "Evaluation", ok
    assert stored(api, ok["id"]).backend_options == {"protocol": "grpc"}


PAGE = """query($after: String) { evaluations(first: 2, after: $after) {
             totalCount nextCursor items { id } } }"""


@pytest.mark.parametrize("cursor", ["99999999999999999999", "3", "abc", "-1", "²", "1e3"])
def test_cursors_past_the_end_or_malformed_give_an_empty_page(api: Api, cursor: str) -> None:
    api.add_agent()
    token = api.token("alice")
    for _ in range(3):
        submit(api, token)
    page = api.data(token, PAGE, {"after": cursor})["evaluations"]
    assert page == {"totalCount": 3, "nextCursor": None, "items": []}
    assert len(api.data(token, PAGE, {"after": "1"})["evaluations"]["items"]) == 2


def test_unexpected_exceptions_are_masked(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.api.graphql.evaluations import mutations

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError('INSERT INTO evaluations (id, dataset) VALUES ("secret")')

    monkeypatch.setattr(mutations, "submit", broken)
    api.add_agent()
    token = api.token("alice")
    response = api.gql(token, SUBMIT, {"input": QUICK})
    assert response.status_code == 200
    body = response.text
    assert "INSERT" not in body and "secret" not in body
    assert response.json()["errors"][0]["message"].startswith("Unexpected error")
    # What GraphQL itself refuses still says what is wrong, so clients can fix it.
    unknown = api.gql(token, "{ evaluations { nope } }").json()["errors"][0]["message"]
    assert "nope" in unknown
    too_big = api.gql(token, SUBMIT, {"input": {**QUICK, "samples": 2**40}}).json()
    assert "samples" in too_big["errors"][0]["message"]


def test_subscription_errors_are_masked(
    api: Api, monkeypatch: pytest.MonkeyPatch, submit_query: Callable[[], str]
) -> None:
    def broken(*_: Any) -> Any:
        raise RuntimeError("connection to postgres://benchstack:hunter2@db failed")

    monkeypatch.setattr(watcher, "_one", broken)
    token = api.token("alice")
    with api.client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"]) as ws:
        ws.send_text(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        assert json.loads(ws.receive_text())["type"] == "connection_ack"
        query = "subscription($id: String!) { evaluationUpdates(id: $id) { state } }"
        payload = {"query": query, "variables": {"id": "x"}}
        ws.send_text(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        text = ws.receive_text()
        assert "hunter2" not in text and "postgres" not in text
        message = json.loads(text)
        errors = message["payload"] if message["type"] == "error" else message["payload"]["errors"]
        assert errors[0]["message"].startswith("Unexpected error")


def test_shadowing_is_refused_and_resolution_is_deterministic(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    # Shared, so resolution is the same for its owner and for everyone else.
    register = """mutation($m: String!) { registerModel(manifest: $m, shared: true) {
        __typename ... on Model { name version } ... on UserError { field message } } }"""

    def manifest(name: str, version: str) -> str:
        text = (CATALOGUE_DIR / "resnet18.yaml").read_text()
        text = text.replace("name: resnet18", f"name: {name}")
        return text.replace("version: 1.0.0", f"version: {version}")

    # The catalogue's names are not for registration, in any version.
    shadow = api.data(bob, register, {"m": manifest("resnet18", "9.0.0")})["registerModel"]
    assert (shadow["__typename"], shadow["field"]) == ("ModelExists", "name")
    # A name belongs to its first registrant.
    for version in ("1.9.0", "1.10.0", "2.0.0-rc.1"):
        done = api.data(alice, register, {"m": manifest("a-net", version)})["registerModel"]
        assert done["__typename"] == "Model", done
    taken = api.data(bob, register, {"m": manifest("a-net", "3.0.0")})["registerModel"]
    assert (taken["__typename"], taken["field"]) == ("ModelExists", "name")
    again = api.data(alice, register, {"m": manifest("a-net", "1.10.0")})["registerModel"]
    assert (again["__typename"], again["field"]) == ("ModelExists", "version")
    # No version: the highest semantic version, for everyone (2.0.0-rc.1 > 1.10.0 > 1.9.0,
    # compared as versions, not as text and not by registration time).
    for who in (alice, bob):
        latest = submit(api, who, model="a-net")
        assert stored(api, latest["id"]).model_version == "2.0.0-rc.1"
        exact = submit(api, who, model="a-net", version="1.9.0")
        assert stored(api, exact["id"]).model_version == "1.9.0"
    missing = submit(api, alice, model="a-net", version="7.0.0")
    assert missing["__typename"] == "UnknownModel"


def test_a_stored_shadow_of_a_catalogue_model_is_never_chosen(api: Api) -> None:
    from services.core.catalogue import list_catalogue
    from shared.db.catalog import RegisteredModel

    api.add_agent()
    token = api.token("alice")
    api.token("mallory")
    shipped = next(m for m in list_catalogue() if m.name == "resnet18")
    shadow = shipped.to_dict()
    shadow["version"] = "99.0.0"
    shadow["source"] = {"file": {"path": "/etc/passwd", "sha256": SHA}}
    with session_scope(api.settings.effective_database_url) as session:
        # As a registration stored before registerModel refused catalogue names.
        session.add(
            RegisteredModel(
                name="resnet18",
                version="99.0.0",
                framework="torch",
                manifest_yaml="",
                manifest=shadow,
                owner_id=None,
            )
        )
    result = submit(api, token, model="resnet18")
    row = stored(api, result["id"])
    assert row.model_version == shipped.version
    assert row.manifest["source"] == {"architecture": "torchvision:resnet18"}


def test_a_concurrent_duplicate_registration_is_model_exists(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.api import model_registry

    token = api.token("alice")
    register = """mutation($m: String!) { registerModel(manifest: $m) {
        __typename ... on UserError { field } } }"""
    text = (CATALOGUE_DIR / "resnet18.yaml").read_text().replace("name: resnet18", "name: dup")
    assert api.data(token, register, {"m": text})["registerModel"]["__typename"] == "Model"
    # The other request's check ran before this one's insert: only the constraint decides.
    monkeypatch.setattr(model_registry, "registration_refusal", lambda *_, **__: None)
    result = api.data(token, register, {"m": text})["registerModel"]
    assert result == {"__typename": "ModelExists", "field": "version"}


def test_datasets_folder_setting_is_used(api: Api, tmp_path: Path) -> None:
    api.add_agent()
    token = api.token("alice")
    api.settings.datasets_dir = tmp_path / "elsewhere"
    (tmp_path / "elsewhere" / "coco").mkdir(parents=True)
    result = submit(api, token, dataset="coco")
    assert stored(api, result["id"]).dataset == str(tmp_path / "elsewhere" / "coco")
