"""Fixtures of the scheduler tests: the pipeline's tasks in process (tests.support.pipeline)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pipeline import Outbox, outbox_fixture


@pytest.fixture
def outbox(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Outbox]:
    yield from outbox_fixture(data_dir, monkeypatch)
