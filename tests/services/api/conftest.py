"""The API in-process over SQLite, with a publisher that records instead of sending."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.api.app import create_app
from services.api.auth import create_token
from services.core.messages import Message
from shared.db import evaluation_repo
from shared.db.migrations import upgrade_head
from shared.db.session import session_scope
from shared.settings import Settings


@dataclass
class RecordingPublisher:
    sent: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)

    def __call__(self, task_name: str, message: Message, queue: str | None) -> None:
        self.sent.append((task_name, message.to_json(), queue))


@dataclass
class Api:
    client: TestClient
    settings: Settings
    publisher: RecordingPublisher

    def token(self, user: str) -> str:
        with session_scope(self.settings.effective_database_url) as session:
            return create_token(session, user_name=user)

    def gql(self, token: str | None, query: str, variables: dict[str, Any] | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.client.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )

    def data(self, token: str, query: str, variables: dict[str, Any] | None = None) -> Any:
        response = self.gql(token, query, variables)
        assert response.status_code == 200, response.text
        body = response.json()
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def add_agent(
        self, framework: str = "null", device: str = "cpu", version: str = "0.1.0"
    ) -> None:
        with session_scope(self.settings.effective_database_url) as session:
            evaluation_repo.upsert_agent(
                session,
                agent_id=f"host/inference.{framework}.{device}/1",
                hostname="host",
                queue=f"inference.{framework}.{device}",
                framework=framework,
                framework_version=version,
                device=device,
                hardware={},
                software={},
            )


@cache
def _migrated_template() -> Path:
    """A SQLite file migrated to head once per test process.

    Migrating a new file runs every migration (0.4-0.6 s, 2 s on a busy host) and about
    two hundred tests here each start on a new one; a copy of this file is at head, so the
    app's start finds nothing to do (15 ms). A first start's migration is tested on its
    own (tests/shared/db/test_schema_race.py, the README's lines)."""
    folder = Path(tempfile.mkdtemp(prefix="benchstack-api-template-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    template = folder / "api.db"
    upgrade_head(f"sqlite:///{template}")
    return template


@contextmanager
def api_with(tmp_path: Path, **settings_given: Any) -> Iterator[Api]:
    """The API in-process over SQLite in ``tmp_path``, with these settings over the tests'."""
    chosen: dict[str, Any] = {
        "data_dir": tmp_path,
        "database_url": f"sqlite:///{tmp_path / 'api.db'}",
        "s3_endpoint": "",
        "environment": "test",
        # No token cache: these tests revoke and expire tokens and expect the next request
        # to see it (tests/services/api/test_token_cache.py covers the cache's window).
        "api_token_cache_seconds": 0,
        # Nor a cache of shared reads: these tests add agents and list them at once.
        "api_shared_reads_cache_seconds": 0,
    }
    # A second app on the same folder keeps what the first one stored.
    if "database_url" not in settings_given and not (tmp_path / "api.db").exists():
        shutil.copyfile(_migrated_template(), tmp_path / "api.db")
    settings = Settings(**{**chosen, **settings_given})
    publisher = RecordingPublisher()
    with TestClient(create_app(settings, publish=publisher)) as client:
        yield Api(client, settings, publisher)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with api_with(tmp_path) as made:
        yield made


@pytest.fixture
def submit_query() -> Callable[[], str]:
    return lambda: (
        """
    mutation($input: SubmitEvaluationInput!) {
      submitEvaluation(input: $input) {
        __typename
        ... on Evaluation { id state framework }
        ... on UserError { message field }
        ... on InvalidManifest { problems }
        ... on UnknownModel { known }
      }
    }"""
    )
