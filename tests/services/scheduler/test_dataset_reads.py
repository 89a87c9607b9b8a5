"""What the scheduler reads of a submitted dataset: bounded (an oversized file is that
sample's error, never read; a dataset over its total fails at planning, saying why) and
confined (a folder swapped for a link out after submission fails at planning)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.preprocess_throughput import photo_like_jpeg
from services.api.submission_request import Submission
from services.preprocess import shards
from services.tasks import scheduler as scheduler_tasks
from shared import runtime
from shared.db.evaluations import Evaluation
from shared.db.states import EvaluationState
from shared.settings import get_settings
from tests.support.pipeline import Outbox, evaluation_row, submit_request, to_running


def _photos(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"{i:02d}.jpg").write_bytes(photo_like_jpeg(64, 48, seed=i))


def _submit(dataset: str) -> str:
    result = submit_request(
        Submission(
            model="resnet18",
            framework="null",
            settings={"minDurationS": 0.2},
            dataset=dataset,
            samples=16,
        )
    )
    assert isinstance(result, Evaluation), result
    return str(result.id)


def _bound(monkeypatch: pytest.MonkeyPatch, name: str, value: int) -> None:
    monkeypatch.setenv(name, str(value))
    get_settings.cache_clear()
    runtime.reset()


def test_an_oversized_file_is_its_samples_error_and_the_run_goes_on(
    outbox: Outbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bound(monkeypatch, "BENCHSTACK_MAX_SAMPLE_BYTES", 100_000)
    folder = get_settings().datasets_dir / "photos"
    _photos(folder, 15)
    with (folder / "zz-huge.jpg").open("wb") as huge:
        huge.truncate(1_000_000)  # a hole: no disk, and past the bound
    evaluation_id = _submit("photos")
    run = to_running(outbox, evaluation_id)
    errors = [
        e for key in run["shard_keys"] for e in shards.read_meta(runtime.store(), key)["errors"]
    ]
    assert errors == [
        "zz-huge.jpg: file of 1000000 bytes; accepted: at most 100000 bytes "
        "(BENCHSTACK_MAX_SAMPLE_BYTES)"
    ]
    assert evaluation_row(evaluation_id).state == EvaluationState.RUNNING.value


def test_a_dataset_over_its_total_fails_at_planning_saying_why(
    outbox: Outbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = get_settings().datasets_dir / "photos"
    _photos(folder, 16)
    total = sum(p.stat().st_size for p in folder.iterdir())
    evaluation_id = _submit("photos")
    _bound(monkeypatch, "BENCHSTACK_MAX_DATASET_BYTES", total - 1)
    scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
    row = evaluation_row(evaluation_id)
    assert row.state == EvaluationState.FAILED.value
    assert row.reason == (
        f"dataset: its 16 samples hold {total} bytes; accepted: at most {total - 1} bytes "
        "for one evaluation (BENCHSTACK_MAX_DATASET_BYTES); ask for fewer samples"
    )


def test_a_folder_swapped_for_a_link_out_after_submission_fails_at_planning(
    outbox: Outbox, tmp_path: Path
) -> None:
    folder = get_settings().datasets_dir / "photos"
    _photos(folder, 16)
    evaluation_id = _submit("photos")
    outside = tmp_path / "host-files"
    folder.rename(outside)
    folder.symlink_to(outside)
    scheduler_tasks.plan_evaluation({"evaluation_id": evaluation_id})
    row = evaluation_row(evaluation_id)
    assert row.state == EvaluationState.FAILED.value
    assert row.reason is not None and "leads outside the datasets folder" in row.reason
