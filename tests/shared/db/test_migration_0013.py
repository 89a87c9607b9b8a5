"""Migration 0013 keeps every registered model and makes a version unique per owner: after
it, a second user may store the name and version a first user holds, the same user may
not, and it goes back down. On SQLite and on Postgres."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from shared.db.migrations import upgrade_engine

NOW = "2026-11-27 12:00:00"


def _model(engine: Engine, owner: int) -> None:
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO models (name, version, framework, manifest_yaml, manifest, "
                "owner_id, shared, created_at) VALUES ('mine', '1.0.0', 'torch', 'x', '{}', "
                ":owner, false, :now)"
            ),
            {"owner": owner, "now": NOW},
        )


def test_a_version_becomes_unique_per_owner_and_comes_back(engine: Engine) -> None:
    upgrade_engine(engine, "0012")
    with engine.begin() as connection:
        for user in (1, 2):
            connection.execute(
                text("INSERT INTO users (id, name, created_at) VALUES (:id, :name, :now)"),
                {"id": user, "name": f"u{user}", "now": NOW},
            )
    _model(engine, 1)
    with pytest.raises(IntegrityError):
        _model(engine, 2)  # before: one "mine 1.0.0" across all users
    upgrade_engine(engine, "0013")
    _model(engine, 2)
    with pytest.raises(IntegrityError):
        _model(engine, 2)
    with engine.connect() as connection:
        owners = connection.execute(text("SELECT owner_id FROM models ORDER BY owner_id"))
        assert [row[0] for row in owners] == [1, 2]
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM models WHERE owner_id = 2"))
    from alembic import command

    from shared.db.migrations import alembic_config

    with engine.connect() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0012")
        connection.commit()
    with pytest.raises(IntegrityError):
        _model(engine, 2)
