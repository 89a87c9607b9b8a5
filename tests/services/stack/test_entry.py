"""What each API process does to its garbage collector before serving."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from services.stack.entry import settle_garbage_collector


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_start_up_objects_are_frozen_and_young_collections_rarer() -> None:
    _, second, third = gc.get_threshold()
    start_up = [[] for _ in range(1000)]  # containers: objects the collector tracks
    assert gc.get_freeze_count() == 0
    settle_garbage_collector(20_000)
    assert gc.get_freeze_count() >= len(start_up)
    assert gc.get_threshold() == (20_000, second, third)
