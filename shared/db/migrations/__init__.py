"""Alembic migrations, run programmatically: no alembic.ini is needed anywhere.

``upgrade_head(url)`` is what ``benchstack db upgrade`` calls; ``get_engine`` calls
``upgrade_engine`` on first use so embedded mode and every service start on the newest
schema. On Postgres a transaction-scoped advisory lock serialises the services that start
together; on an SQLite file, a file lock beside the database does.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.exc import DBAPIError

from shared.db import bounded_waits

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent
# The newest revision in versions/. A process whose database is already there skips
# Alembic, which loads every migration script to find out (0.45 s of each CLI command's
# and each worker's start). tests/shared/db/test_migration_head.py checks it against the
# scripts, so a new migration cannot land without moving it.
HEAD_REVISION = "0019"
# Any constant works; it only has to be the same in every process.
_ADVISORY_LOCK_ID = 0x62656E6368


def alembic_config(url: str = "") -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url:
        # '%' would be read as interpolation by configparser.
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """Hold an exclusive lock on ``<database>.migrate.lock`` while migrating an SQLite file.

    SQLite has no advisory locks, and two first runs on a fresh data folder would both
    see an empty database and both create ``alembic_version`` ("table alembic_version
    already exists"). A flock beside the file serialises them; the second then finds the
    schema at head and does nothing. The kernel drops the lock if its holder dies.
    """
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        yield
        return
    path = Path(database).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".migrate.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def upgrade_engine(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision`` in one transaction. On Postgres the transaction first takes
    a transaction-scoped advisory lock, so services starting together migrate one after
    another and the lock ends with the transaction, whatever happens: through a PgBouncer
    in transaction mode (docs/scale.md) a session lock and its unlock could reach two
    different server connections, and the lock would outlive its holder."""
    if revision == "head" and stored_revision(engine) == HEAD_REVISION:
        return
    from alembic import command

    with _sqlite_file_lock(engine), bounded_waits.unbounded(), engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            # A migration (an index built on a large table) and the wait for another
            # process's may take longer than database_statement_timeout_seconds.
            connection.execute(text("SET LOCAL statement_timeout = 0"))
            connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": _ADVISORY_LOCK_ID})
        config = alembic_config()
        config.attributes["connection"] = connection
        # Alembic runs inside the transaction already begun (env.py's begin_transaction
        # is a no-op then): the lock, the DDL and the version row commit together.
        command.upgrade(config, revision)
        connection.commit()


def stored_revision(engine: Engine) -> str | None:
    """The revision the database says it is at, in one query; None when it has no
    version table yet (a fresh database) or cannot be read."""
    try:
        with engine.connect() as connection:
            value = connection.scalar(text("SELECT version_num FROM alembic_version"))
    except DBAPIError:
        return None
    return None if value is None else str(value)


def create_database_if_missing(url: str) -> bool:
    """Create a Postgres database the URL names when the server has none by that name
    (a first ``benchstack db upgrade``); True when it was created. Other dialects: False."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("postgresql") or not parsed.database:
        return False
    admin = create_engine(parsed.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            exists = connection.scalar(
                text("SELECT 1 FROM pg_database WHERE datname = :name"),
                {"name": parsed.database},
            )
            if exists:
                return False
            # The name cannot be a bound parameter; quote it as an identifier.
            quoted = admin.dialect.identifier_preparer.quote_identifier(parsed.database)
            connection.execute(text(f"CREATE DATABASE {quoted}"))
            return True
    finally:
        admin.dispose()


def upgrade_head(url: str) -> None:
    engine = create_engine(url)
    try:
        upgrade_engine(engine)
    finally:
        engine.dispose()


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
