"""The messages that move an evaluation on, built from its row alone."""

from __future__ import annotations

from services.core.dispatch import PlannedShard, inference_message, run_id_for, shard_message
from shared.db.evaluations import Evaluation


def _evaluation(**overrides: object) -> Evaluation:
    fields: dict[str, object] = {
        "id": "e-1",
        "framework": "null",
        "device": "cpu",
        "batch_size": 4,
        "scenario": {"scenario": "offline"},
        "manifest": {"name": "m"},
        "backend_options": None,
        "dataset": "synthetic",
        "dataset_count": 16,
        "seed": 3,
        "run_id": None,
        "trace_level": "NONE",
    }
    return Evaluation(**(fields | overrides))


def test_the_run_id_is_the_same_for_every_plan_of_one_evaluation() -> None:
    assert run_id_for("e-1") == run_id_for("e-1")
    assert run_id_for("e-1") != run_id_for("e-2")


def test_inference_is_asked_for_the_rows_run_with_its_settings() -> None:
    message = inference_message(_evaluation(), ["shards/a.npy", "shards/b.npy"])
    assert message.run_id == run_id_for("e-1")  # not planned yet: the deterministic id
    assert message.shard_keys == ["shards/a.npy", "shards/b.npy"]
    assert (message.framework, message.device, message.batch_size) == ("null", "cpu", 4)
    assert message.backend_options == {}
    assert message.trace_level == "NONE"
    stored = inference_message(
        _evaluation(run_id="r-9", backend_options={"x": 1}, trace_level="FRAMEWORK"), []
    )
    assert (stored.run_id, stored.backend_options) == ("r-9", {"x": 1})
    assert stored.trace_level == "FRAMEWORK"  # the worker profiles at the level asked for
    assert message.threads is None  # the agent's setting, else its choice
    assert inference_message(_evaluation(threads=3), []).threads == 3


def test_a_shard_message_names_the_shard_and_how_to_prepare_it() -> None:
    shard = PlannedShard(index=1, key="shards/k.npy", sample_ids=["s2", "s3"])
    message = shard_message(_evaluation(), shard, {"shape": [3, 8, 8]})
    assert (message.shard_index, message.shard_key, message.sample_ids) == (
        1,
        "shards/k.npy",
        ["s2", "s3"],
    )
    assert (message.dataset, message.dataset_count, message.seed) == ("synthetic", 16, 3)
    assert message.input_spec == {"shape": [3, 8, 8]}


def test_a_gang_rank_is_told_its_local_rank_and_an_older_one_goes_without() -> None:
    place = {"kind": "training-scaling", "gang": "g", "rank": 1, "world_size": 2, "host_ranks": 2}
    newer = inference_message(_evaluation(group_info=place | {"local_rank": 1}), [])
    assert newer.data_parallel == {
        "gang": "g",
        "rank": 1,
        "world_size": 2,
        "host_ranks": 2,
        "local_rank": 1,
    }
    older = inference_message(_evaluation(group_info=place), [])
    assert older.data_parallel is not None and "local_rank" not in older.data_parallel


def test_only_a_record_that_places_a_rank_makes_one() -> None:
    """Told by the record's keys, not by its kind's name: a sweep point is no rank, and a
    record missing one of the gang's keys places none."""
    sweep = {"kind": "sweep", "id": "s", "parameter": "batch_size", "value": 8}
    assert inference_message(_evaluation(group_info=sweep), []).data_parallel is None
    partial = {"kind": "training-scaling", "gang": "g", "rank": 1, "world_size": 2}
    assert inference_message(_evaluation(group_info=partial), []).data_parallel is None
    assert inference_message(_evaluation(), []).data_parallel is None
