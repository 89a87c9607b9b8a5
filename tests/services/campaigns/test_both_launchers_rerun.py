"""A rerun run embedded (``rerun_stored``) and through the stack (``submit_rerun``, then
the pipeline's tasks in process: tests/support/pipeline.py) of the same stored stack run:
both store one group record shape and judge with one rule (services/core/campaigns/rerun.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from services.api.auth import get_or_create_user
from services.api.campaigns.rerun.group import load_rerun, submit_rerun
from services.api.campaigns.rerun.types import RerunType
from services.api.rejections import Rejection
from services.api.submission import submit
from services.campaigns.rerun import rerun_stored
from services.core.campaigns import rerun
from services.core.campaigns.group import InvalidCampaign
from shared import runtime
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from tests.services.campaigns.test_both_launchers import TASKS, shape, stacked, through_stack
from tests.support.pipeline import Outbox, outbox_fixture


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    yield from outbox_fixture(data_dir, monkeypatch)


def stack_run(outbox: Outbox) -> tuple[int, str]:
    """One evaluation through the stack; its owner and its stored run's id."""
    with runtime.db() as session:
        owner = get_or_create_user(session, "both-launchers")
        session.flush()
        evaluation = submit(
            session, runtime.settings(), outbox, owner_id=owner.id, request=stacked()
        )
        assert isinstance(evaluation, Evaluation), evaluation
        session.commit()
        owner_id, evaluation_id = owner.id, evaluation.id
    while outbox.sent:
        task, message, _ = outbox.sent.pop(0)
        TASKS[task](message)
    with runtime.db() as session:
        stored = session.get(Evaluation, evaluation_id)
        assert stored is not None and stored.run_id is not None, stored
        return owner_id, stored.run_id


def records(group_id: str) -> list[dict[str, Any]]:
    """Each stored run's group record in the group, and each stored evaluation's."""
    with runtime.db() as session:
        runs = session.scalars(select(Run)).all()
        found = [
            dict(r.report["group"]) for r in runs if (r.report["group"] or {}).get("id") == group_id
        ]
        evaluations = session.scalars(select(Evaluation).where(Evaluation.group_id == group_id))
        found += [{**(e.group_info or {}), "id": e.group_id} for e in evaluations]
    return found


def test_a_rerun_stores_one_record_shape_and_judges_alike(outbox: Outbox) -> None:
    owner_id, original = stack_run(outbox)

    def submit_it(session: Any, settings: Any, publish: Any, owner_id: int) -> object:
        return submit_rerun(
            session, settings, publish, owner_id=owner_id, run_id=original[:8], repeats=2
        )

    remote = through_stack(outbox, submit_it)
    here = rerun_stored(original[:8], runtime.settings(), repeats=2)
    with runtime.db() as session:
        local = session.get(Run, here.rerun_runs[0])
        assert local is not None
        local_group = str(local.report["group"]["id"])
        view = load_rerun(session, owner_id=owner_id, group_id=remote)
        shown = RerunType.from_view(view) if view is not None else None
    local_records, remote_records = records(local_group), records(remote)
    assert len(local_records) == 2 and len(remote_records) == 4  # 2 runs + 2 evaluations
    assert (
        shape(local_records)
        == shape(remote_records)
        == {(("count", "int"), ("id", "str"), ("index", "int"), ("kind", "str"), ("of", "str"))}
    )
    assert {r["of"] for r in local_records + remote_records} == {original}
    assert view is not None and view.verdict is not None
    there = view.verdict
    # Both compare the same original on the same figures, by the same rule.
    assert here.original_run == there.original_run == original
    assert (
        [d.name for d in here.figures] == [d.name for d in there.figures] == ["samples_per_second"]
    )
    assert here.rule == there.rule == rerun.RULE
    # As GraphQL shows it.
    assert shown is not None and shown.verdict == there.verdict and shown.rule == rerun.RULE
    assert [m.index for m in shown.reruns] == [0, 1] and shown.original.id == original
    assert [f.name for f in shown.figures] == ["samples_per_second"]
    for found in (here, there):
        assert len(found.rerun_runs) == 2
        assert found.verdict in {"within noise", "inconclusive", "outside noise"}
        assert all(d.band >= rerun.NOISE_FLOOR for d in found.figures)


def test_a_rerun_count_out_of_bounds_is_refused_alike(outbox: Outbox) -> None:
    owner_id, original = stack_run(outbox)
    with pytest.raises(InvalidCampaign, match=r"--repeats: 21; accepted: 1\.\.20"):
        rerun_stored(original, runtime.settings(), repeats=21)
    with runtime.db() as session:
        refused = submit_rerun(
            session, runtime.settings(), outbox, owner_id=owner_id, run_id=original, repeats=21
        )
        not_found = submit_rerun(
            session, runtime.settings(), outbox, owner_id=owner_id, run_id="f" * 8, repeats=1
        )
    assert isinstance(refused, Rejection) and refused.message == "repeats: 21; accepted: 1..20"
    assert isinstance(not_found, Rejection) and not_found.field == "runId"
