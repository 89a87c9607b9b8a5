"""An engine on an old-schema database, once on SQLite and once on Postgres (their DDL and
JSON SQL differ), for the migration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = (
        f"sqlite:///{tmp_path / 'old.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    made = create_engine(url)
    yield made
    made.dispose()
