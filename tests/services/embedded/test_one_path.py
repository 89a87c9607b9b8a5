"""The embedded launcher runs the stack's own path: the LoadGen workload's ``measure`` with
its RunInference message, and its ``read``/``save``. Where the two modes disagreed, one
rule holds for both: the agent record, the environment, a shard with failed samples."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from PIL import Image

from services.aggregator.repository import get_run
from services.core.catalogue import resolve_model
from services.core.dispatch import inference_message
from services.core.request import RunRequest
from services.core.run_report import attempt_prefix
from services.core.workload import AgentRun
from services.embedded.bench import run_bench
from services.embedded.evaluation import evaluation_of
from services.embedded.request import checked
from services.preprocess.datasets import resolve_dataset
from services.preprocess.local_shard import prepare_shard
from services.workloads.loadgen.measure import measure
from shared.db.session import session_scope
from shared.runtime import resources_for
from shared.settings import Settings

TINY = "tests/fixtures/tiny_cnn.yaml"


def null_request() -> RunRequest:
    return RunRequest(
        model=TINY,
        framework="null",
        settings={"min_duration_s": 0.2},
        samples=8,
        backend_options={"service_time_ms": 1.0},
    )


def test_an_embedded_run_records_the_agent_as_a_stack_run_does(settings: Settings) -> None:
    priced = settings.model_copy(update={"agent_price_per_hour": 2.5})
    report = run_bench(null_request(), priced)
    # The stack's record: no agent id here, the declared price, the threads applied.
    assert report["agent"]["id"] == "" and report["agent_id"] == ""
    assert report["agent"]["settings"] == {"price_per_hour": 2.5}
    applied = report["agent"]["backend_options"]["intra_op_threads"]
    assert applied >= 1 and applied == report["settings"]["backend_options"]["intra_op_threads"]


def test_the_stacks_measurement_records_the_framework_runtime(settings: Settings) -> None:
    """The measurement child (default hooks, a message as the scheduler builds it) records
    what the loaded frameworks say of CUDA, as the embedded mode always did."""
    request = null_request()
    manifest = resolve_model(TINY)
    resources = resources_for(settings)
    dataset = resolve_dataset("synthetic", count=4, seed=0, cache_dir=settings.data_dir)
    shard = prepare_shard(resources.store, dataset, manifest)
    evaluation = evaluation_of(request, checked(request, settings), manifest, shard)
    message = inference_message(evaluation, [shard.key])
    run = AgentRun(message, "agent-1", attempt_prefix(message.run_id, 1), {}, resources)
    keys = measure(run)
    measured = json.loads(resources.store.get_bytes(keys["measurement"]))
    assert "framework_runtime" in measured["environment"]
    assert measured["agent"]["id"] == "agent-1"
    assert measured["sut_latency"]["count"] > 0


def test_a_shard_with_a_failed_sample_is_kept_and_reused_naming_it(
    settings: Settings, tmp_path: Path
) -> None:
    """As the preprocess workers do: the shard is stored with its failures in the sidecar,
    and a run that reuses it names them again (the embedded mode stored none before, and
    prepared the whole dataset again every run)."""
    folder = tmp_path / "images" / "cat"
    folder.mkdir(parents=True)
    for index in range(3):
        Image.fromarray(np.full((32, 32), index * 40, np.uint8)).save(folder / f"ok{index}.png")
    (folder / "broken.png").write_bytes(b"not an image")
    request = replace(null_request(), dataset=str(tmp_path / "images"), samples=None)

    first = run_bench(request, settings)
    again = run_bench(request, settings)

    assert not first["preprocessing"]["reused"] and again["preprocessing"]["reused"]
    assert first["preprocessing"]["shard"] == again["preprocessing"]["shard"]
    for report in (first, again):
        assert report["dataset"]["samples"] == 3
        assert len(report["dataset"]["failed"]) == 1
        assert "broken.png" in report["dataset"]["failed"][0]


def test_a_group_keeps_its_shape_through_the_stacks_read(settings: Settings) -> None:
    """The stack's read names a group by its evaluation's group id; a rerun's group has
    none ({"kind", "of"}) and must come out as it went in, as a sweep point's does."""
    rerun = {"kind": "rerun", "of": "1234"}
    point = {"kind": "sweep", "id": "5678", "parameter": "batch_size", "value": 2}
    for group in (rerun, point):
        report = run_bench(replace(null_request(), group=group), settings)
        assert report["group"] == group and list(report["group"]) == list(group)
        with session_scope(settings.effective_database_url) as session:
            stored = get_run(session, report["run_id"]).report
        assert stored["group"] == group
