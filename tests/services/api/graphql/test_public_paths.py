"""A stack run names no path of the server: not in its stored report and row, and not in
any field GraphQL serves of its Evaluation and Run.

The pipeline's real tasks run in process over SQLite and a local folder store
(tests/support/pipeline.py) on a dataset folder inside the datasets folder; the API then
serves the stored rows. Every string of the stored report, settings, dataset and
environment, and of every field of the Evaluation and Run types (selected from the schema
itself, so a field added later is checked too), must not be an absolute path nor hold the
server's data folder or the test's temporary folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from benchmarks.preprocess_throughput import photo_like_jpeg
from services.api.submission_request import Submission
from services.campaigns.rerun import request_from_run
from services.tasks import aggregator as aggregator_tasks
from services.tasks import inference as inference_tasks
from shared import queues, runtime
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from shared.settings import get_settings
from tests.services.api.conftest import Api, api_with
from tests.support.pipeline import Outbox, outbox_fixture, submit_request, to_running

OWNER = "redelivery"  # the user tests/support/pipeline.submit_request submits as


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    monkeypatch.setenv("BENCHSTACK_MODEL_CACHE_MB", "0")
    monkeypatch.setenv("BENCHSTACK_HOST_SLOT_DIR", str(data_dir / "host"))
    yield from outbox_fixture(data_dir, monkeypatch)


def strings(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(where, text) for every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"{where}.{key}", str(key)
            yield from strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from strings(item, f"{where}[{i}]")


def server_paths(value: Any, data_dir: Path) -> list[str]:
    """The strings of ``value`` that name a place on the server (a link's ``url``, the
    API's own route to the file, is no place on the server's disk)."""
    tmp = str(data_dir.parent)
    return [
        f"{where}: {text[:160]}"
        for where, text in strings(value)
        if (text.startswith("/") and not where.endswith(".url"))
        or str(data_dir) in text
        or tmp in text
    ]


def _stack_run(outbox: Outbox, dataset: str, trace_level: str = "NONE") -> str:
    """One evaluation of the folder ``dataset`` through the stack's tasks; its id."""
    result = submit_request(
        Submission(
            model="resnet18",
            framework="null",
            settings={"minDurationS": 0.2, "targetQps": 2000},
            dataset=dataset,
            samples=12,
            seed=5,
            trace_level=trace_level,
        )
    )
    assert isinstance(result, Evaluation), result
    run = to_running(outbox, str(result.id))
    inference_tasks.run_inference(run)
    ((completed, _),) = outbox.take(queues.RUN_COMPLETED)
    aggregator_tasks.run_completed(completed)
    return str(result.id)


def _photos(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"{i:02d}.jpg").write_bytes(photo_like_jpeg(64, 48, seed=i))
    # One that cannot be decoded: its error names it, as the client sees the folder.
    (folder / "zz-broken.jpg").write_bytes(b"not a jpeg")


def _fields(api: Api, token: str, type_name: str, depth: int) -> str:
    """A selection of every field of ``type_name`` that takes no required argument, object
    fields ``depth`` levels down (asked of the schema, so new fields are checked too)."""
    query = """query($name: String!) { __type(name: $name) { fields {
        name args { type { kind } }
        type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }"""
    found = api.data(token, query, {"name": type_name})["__type"]["fields"]
    picked = []
    for field in found:
        if any(arg["type"]["kind"] == "NON_NULL" for arg in field["args"]):
            continue
        named = field["type"]
        while named.get("ofType"):
            named = named["ofType"]
        if named["kind"] in ("SCALAR", "ENUM"):
            picked.append(field["name"])
        elif named["kind"] == "OBJECT" and depth > 0:
            inner = _fields(api, token, named["name"], depth - 1)
            if inner:
                picked.append(f"{field['name']} {{ {inner} }}")
    return " ".join(picked)


# FULL: every profiling pass the null backend has, and the trace file stored with the run.
@pytest.mark.parametrize("trace_level", ["NONE", "FULL"])
def test_a_stack_runs_stored_report_and_graphql_fields_name_no_server_path(
    outbox: Outbox, data_dir: Path, trace_level: str
) -> None:
    settings = get_settings()
    _photos(settings.datasets_dir / "photos" / "val", 12)
    evaluation_id = _stack_run(outbox, "photos/val", trace_level)

    with runtime.db() as session:
        row = session.scalars(select(Run).where(Run.evaluation_id == evaluation_id)).one()
        stored = {
            "report": row.report,
            "settings": row.settings,
            "environment": row.environment,
            "dataset": row.dataset,
        }
        evaluation_spec = session.get(Evaluation, evaluation_id).dataset  # type: ignore[union-attr]
    # What the client named, where it named a dataset.
    assert stored["dataset"] == "photos/val"
    assert stored["report"]["dataset"]["name"] == "photos/val"
    assert stored["report"]["settings"]["dataset"] == "photos/val"
    assert stored["report"]["settings"]["manifest_dir"] is None
    assert stored["report"]["logs"] == stored["report"]["log_keys"]  # object keys
    assert server_paths(stored, data_dir) == []
    if trace_level != "NONE":
        assert stored["report"]["profile"] and "trace.json" in stored["report"]["log_keys"]
    # A rerun of it on the server reads the folder where the client's name leads.
    with runtime.db() as session:
        manifest = session.get(Run, row.id).manifest  # type: ignore[union-attr]
    again, _ = request_from_run(row.id, stored["report"], manifest, settings.datasets_dir)
    assert again.dataset == str(settings.datasets_dir / "photos" / "val")
    # The workers still read the folder by its place on the server (a column no client reads).
    assert evaluation_spec == str(settings.datasets_dir / "photos" / "val")

    with api_with(data_dir, database_url=settings.effective_database_url) as api:
        token = api.token(OWNER)
        selection = _fields(api, token, "Evaluation", depth=2)
        assert "runs {" in selection and "report" in selection and "logs {" in selection
        served = api.data(
            token, f"query($id: String!) {{ evaluation(id: $id) {{ {selection} }} }}",
            {"id": evaluation_id},
        )["evaluation"]  # fmt: skip
    assert served["dataset"] == "photos/val" and served["runs"][0]["dataset"] == "photos/val"
    assert {link["location"] for link in served["runs"][0]["logs"]} == set(
        stored["report"]["log_keys"].values()
    )
    assert server_paths(served, data_dir) == []


def test_a_run_stored_with_server_paths_is_served_without_them(
    outbox: Outbox, data_dir: Path
) -> None:
    """A row stored before runs were stored without paths (its report names the log files
    and the dataset folder where the server keeps them, a reason names a folder): the API
    serves them relative to the server's folders."""
    settings = get_settings()
    _photos(settings.datasets_dir / "photos", 12)
    evaluation_id = _stack_run(outbox, "photos")
    folder = str(settings.datasets_dir / "photos")
    with runtime.db() as session:
        row = session.scalars(select(Run).where(Run.evaluation_id == evaluation_id)).one()
        keys = row.report["log_keys"]
        row.report = {
            **row.report,
            "logs": {name: str(settings.objects_dir / key) for name, key in keys.items()},
            "dataset": {**row.report["dataset"], "name": folder},
            "settings": {**row.report["settings"], "dataset": folder},
            "hints": [f"dataset: no images in {folder}/sub"],
        }
        row.dataset = folder
        evaluation = session.get(Evaluation, evaluation_id)
        assert evaluation is not None
        evaluation.reason = f"dataset: {folder!r} is not a folder"
    query = """query($id: String!) { evaluation(id: $id) { dataset reason
        runs { dataset report settings logs { name location } } } }"""
    with api_with(data_dir, database_url=settings.effective_database_url) as api:
        served = api.data(api.token(OWNER), query, {"id": evaluation_id})["evaluation"]
    assert server_paths(served, data_dir) == []
    (run,) = served["runs"]
    assert (served["dataset"], run["dataset"], run["report"]["dataset"]["name"]) == (
        "photos", "photos", "photos"
    )  # fmt: skip
    assert served["reason"] == "dataset: 'photos' is not a folder"
    assert run["report"]["hints"] == ["dataset: no images in photos/sub"]
    assert {link["location"] for link in run["logs"]} == set(keys.values())
