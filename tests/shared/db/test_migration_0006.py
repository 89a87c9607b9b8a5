"""Revision 0006 on a database that already holds tokens and registered models."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from shared.db.clock import as_utc
from shared.db.migrations import upgrade_engine


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'db.sqlite'}"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_old_tokens_get_a_grace_period_and_old_models_become_private(
    backend: str, request: pytest.FixtureRequest
) -> None:
    engine = create_engine(request.getfixturevalue(f"{backend}_url"))
    try:
        upgrade_engine(engine, "0005")
        now = datetime.now(UTC)
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO users (id, name, created_at) VALUES (1, 'alice', :now)"),
                {"now": now},
            )
            connection.execute(
                text(
                    "INSERT INTO api_tokens (user_id, token_hash, prefix, label, created_at) "
                    "VALUES (1, :hash, 'bst_abcdef', '', :now)"
                ),
                {"hash": "0" * 64, "now": now},
            )
            connection.execute(
                text(
                    "INSERT INTO models (name, version, framework, manifest_yaml, manifest, "
                    "owner_id, created_at) VALUES ('m', '1.0.0', 'null', '', '{}', 1, :now)"
                ),
                {"now": now},
            )
        upgrade_engine(engine)
        with engine.connect() as connection:
            expires = connection.scalar(text("SELECT expires_at FROM api_tokens"))
            shared = connection.scalar(text("SELECT shared FROM models"))
        if isinstance(expires, str):  # SQLite hands back the stored text
            expires = datetime.fromisoformat(expires)
        grace = as_utc(expires) - now
        assert timedelta(days=89) < grace <= timedelta(days=90, minutes=1)
        assert not shared
    finally:
        engine.dispose()
