"""Fixtures for every test: an isolated data folder so no test touches ~/.benchstack."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import services  # noqa: F401  # as every entry point does: provides the framework catalogue
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


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans finished during one test.

    OpenTelemetry takes one tracer provider per process, so the first test installs it and
    every test adds its own exporter to it; none depends on running first.
    """
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.clear()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh Postgres database for one test, dropped after it; a skip with the reason
    where no server answers (a failure under BENCHSTACK_REQUIRE_SERVERS=1, as in CI)."""
    from shared.db.session import get_engine
    from tests.support.ephemeral import create_database, drop_database

    admin = os.environ.get(
        "BENCHSTACK_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
    )
    name = f"benchstack_test_{uuid.uuid4().hex[:8]}"
    try:
        url = create_database(admin, name)
    except Exception as exc:
        if os.environ.get("BENCHSTACK_REQUIRE_SERVERS") == "1":
            raise
        pytest.skip(f"no Postgres: {exc.__class__.__name__}")
    yield url
    get_engine(url).dispose()
    get_engine.cache_clear()
    drop_database(admin, name)
