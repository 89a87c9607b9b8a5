"""A data-parallel rank's rendezvous: rank 0 publishes its address under the gang's key in
the object store; a rank that finds none in time says so, naming the key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from services.workloads.training.gang import rendezvous_key, train_in_gang
from services.workloads.training.throughput import TrainingSettings
from shared.storage import LocalStore

SETTINGS = TrainingSettings(
    model="digits",
    steps=2,
    batch_size=4,
    warmup=1,
    image_size=32,
    precision="fp32",
    optimizer="sgd",
    data="synthetic",
    threads=2,
    device="cpu",
)


def test_a_rank_without_a_published_address_fails_with_the_gang_named(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    place = {"gang": "g-1", "rank": 1, "world_size": 2, "host_ranks": 2}
    with pytest.raises(
        RuntimeError, match=r"rank 0 published no address in 0.5 s \(rendezvous/g-1.json\)"
    ):
        train_in_gang(SETTINGS, place, store, timeout_s=0.5, sleep=lambda s: None)


def test_a_gang_of_one_trains_and_reports_its_rank_and_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="torch not installed")
    monkeypatch.setenv("LOCAL_RANK", "7")  # restored after the test
    store = LocalStore(tmp_path)
    place = {"gang": "g-2", "rank": 0, "world_size": 1, "host_ranks": 1}
    document = train_in_gang(SETTINGS, place, store)
    section = document["data_parallel"]
    assert (section["rank"], section["world_size"], section["backend"]) == (0, 1, "gloo")
    assert len(section["weight_digest"]) == 64 and section["threads_per_rank"] == 2
    assert document["statistics"]["steps"] == 2
    assert document["statistics"]["images_per_s"] > 0
    assert len(document["step_seconds"]) == 2 and section["local_rank"] == 0
    assert os.environ["LOCAL_RANK"] == "0"  # set from the gang's place, as torchrun would
    published = json.loads(store.get_bytes(rendezvous_key("g-2")))
    assert published == section["rendezvous"] and published["port"] > 0
