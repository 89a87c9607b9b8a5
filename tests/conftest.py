"""Fixtures for every test: an isolated data folder so no test touches ~/.benchstack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.settings import Settings, get_settings


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh embedded-mode data folder (SQLite file + object folder) for one test."""
    folder = tmp_path / "benchstack-data"
    monkeypatch.setenv("BENCHSTACK_DATA_DIR", str(folder))
    monkeypatch.delenv("BENCHSTACK_DATABASE_URL", raising=False)
    monkeypatch.delenv("BENCHSTACK_S3_ENDPOINT", raising=False)
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return get_settings()
