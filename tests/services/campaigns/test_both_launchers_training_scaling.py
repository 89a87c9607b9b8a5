"""A training scaling over world sizes 1 and 2, run embedded (two local rank processes:
services/campaigns/training_scaling.py) and through the stack (``submit_training_scaling``,
then the pipeline's tasks in process over two agents, a gang's ranks at once: tests/support/
pipeline.py): one stored record shape, the same points, each gang's weights in step."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from services.api.auth import get_or_create_user
from services.api.campaigns.training_scaling.group import (
    load_training_scaling,
    submit_training_scaling,
)
from services.api.campaigns.training_scaling.types import TrainingScalingType
from services.api.group_steps import group_steps
from services.api.rejections import Rejection
from services.api.submission_request import Submission
from services.campaigns.training_scaling import run_training_scaling
from services.core.campaigns.group import InvalidCampaign
from services.core.request import RunRequest
from services.tasks import inference
from shared import queues, runtime, worker_context
from shared.db import evaluation_repo
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from tests.services.campaigns.test_both_launchers import TASKS, shape
from tests.support.pipeline import AGENT, Outbox, outbox_fixture

pytest.importorskip("torch", reason="training scaling trains with torch")
# Six rank processes (1 + 2 ranks in each launcher), each importing torch.
pytestmark = pytest.mark.slow

OPTIONS = {"steps": 3, "warmup": 1, "image_size": 32}
TORCH_AGENTS = ("host/inference.torch.cpu/1", "elsewhere/inference.torch.cpu/7")


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    """The pipeline's fixture with two torch agents, this worker being the first (both
    ranks of a gang run here, each in its measurement child)."""
    for box in outbox_fixture(data_dir, monkeypatch):
        with runtime.db() as session:
            for agent_id in TORCH_AGENTS:
                host, queue, _ = agent_id.split("/")
                evaluation_repo.upsert_agent(
                    session, agent_id=agent_id, hostname=host, queue=queue, framework="torch",
                    framework_version="2", device="cpu", hardware={}, software={},
                )  # fmt: skip
        identity = worker_context.AgentIdentity(ids={"null": AGENT, "torch": TORCH_AGENTS[0]})
        previous = worker_context.install(
            worker_context.WorkerContext(box, identity, group_steps())
        )
        try:
            yield box
        finally:
            worker_context.uninstall(previous)


def drain(outbox: Outbox) -> None:
    """Every message in turn, except that the runs waiting once nothing else is left run
    together: a gang's ranks meet at a rendezvous."""
    while outbox.sent:
        # The agents heartbeat as running ones do: a gang's runs outlast their liveness.
        with runtime.db() as session:
            evaluation_repo.heartbeat(session, list(TORCH_AGENTS))
        others = [s for s in outbox.sent if s[0] != queues.RUN_INFERENCE]
        if others:
            outbox.sent.remove(others[0])
            TASKS[others[0][0]](others[0][1])
            continue
        runs = [message for _, message, _ in outbox.sent]
        outbox.sent.clear()
        with ThreadPoolExecutor(len(runs)) as pool:
            list(pool.map(inference.run_inference, runs))


def records(group_id: str) -> list[dict[str, Any]]:
    with runtime.db() as session:
        runs = session.scalars(select(Run)).all()
        found = [
            dict(r.report["group"])
            for r in runs
            if (r.report.get("group") or {}).get("id") == group_id
        ]
        evaluations = session.scalars(select(Evaluation).where(Evaluation.group_id == group_id))
        found += [{**(e.group_info or {}), "id": e.group_id} for e in evaluations]
    return found


def test_a_training_scaling_stores_one_record_shape_and_the_same_points(outbox: Outbox) -> None:
    # One request, as each launcher takes it (services/core/request.py).
    asked: dict[str, Any] = dict(
        model="resnet18", framework="torch", batch_size=2, workloads=(("training", OPTIONS),)
    )
    with runtime.db() as session:
        owner = get_or_create_user(session, "both-launchers")
        session.flush()
        base = Submission(**asked)
        result = submit_training_scaling(
            session, runtime.settings(), outbox, owner_id=owner.id, base=base, world_sizes=[2, 1]
        )
        assert not isinstance(result, Rejection), result
        session.commit()
        owner_id, remote = owner.id, result[0]
    drain(outbox)
    reports, points = run_training_scaling(RunRequest(**asked), [2, 1], runtime.settings())
    local = str(reports[0]["group"]["id"])
    local_records, remote_records = records(local), records(remote)
    assert len(local_records) == 3 and len(remote_records) == 6  # 1 + 2 ranks; runs + evaluations
    assert shape(local_records) == shape(remote_records)
    assert {k for r in local_records for k in r} == {
        "id", "kind", "world_sizes", "request", "gang", "world_size", "point", "rank",
        "local_rank", "host_ranks",
    }  # fmt: skip
    assert sorted((r["world_size"], r["rank"]) for r in local_records) == [(1, 0), (2, 0), (2, 1)]
    # The request kept in the record: the stack's adds only what a submission carries.
    kept_here, kept_there = local_records[0]["request"], remote_records[0]["request"]
    assert set(kept_there) - set(kept_here) == {"version", "manifest_yaml", "fan_out"}
    assert {k: kept_there[k] for k in kept_here} == kept_here
    with runtime.db() as session:
        view = load_training_scaling(session, remote, owner_id=owner_id)
        shown = TrainingScalingType.from_view(view) if view is not None else None
    assert view is not None and view.state == "done", view
    there = [p.figures for p in view.points]
    # As GraphQL shows it: each point's ranks with their runs.
    assert shown is not None and shown.state == "done"
    assert [[r.rank for r in p.ranks] for p in shown.points] == [[0], [0, 1]]
    assert all(r.run_id and r.images_per_second for p in shown.points for r in p.ranks)
    for found in (points, there):
        assert [p.world_size for p in found] == [1, 2]
        assert all(p.images_per_second and p.weights_agree for p in found), found
        assert found[0].speedup == found[0].efficiency == 1.0
        assert found[1].speedup is not None and found[1].efficiency is not None


def test_world_sizes_out_of_bounds_are_refused_alike(outbox: Outbox) -> None:
    request = RunRequest(model="resnet18", workloads=(("training", OPTIONS),))
    with pytest.raises(InvalidCampaign, match=r"--world-sizes: 17; accepted: 1\.\.16 ranks"):
        run_training_scaling(request, [1, 17], runtime.settings())
    import torch

    gpus = torch.cuda.device_count()
    cuda = replace(request, device="cuda")
    with pytest.raises(ValueError, match=f"{gpus + 1} ranks need {gpus + 1} GPUs; this machine"):
        run_training_scaling(cuda, [gpus + 1], runtime.settings())
    with runtime.db() as session:
        owner = get_or_create_user(session, "both-launchers")
        session.flush()
        base = Submission(model="resnet18", framework="torch", workloads=(("training", {}),))
        refused = submit_training_scaling(
            session, runtime.settings(), outbox, owner_id=owner.id, base=base, world_sizes=[1, 17]
        )
    assert isinstance(refused, Rejection) and refused.field == "worldSizes"
    assert refused.message == "worldSizes: 17; accepted: 1..16 ranks per point"
