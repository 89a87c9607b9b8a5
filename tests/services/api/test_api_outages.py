"""Outages answered clearly: a stopped database or an unreachable broker gives a JSON error
"<dependency> unavailable" with HTTP 503, counted in /metrics; never a plain-text 500.

The database is a throw-away PostgreSQL server of this test's own (initdb into a temporary
folder, on a free port), so stopping it disturbs nobody.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from services.api.app import create_app
from services.api.auth import create_token
from shared.db.session import get_engine, session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, RecordingPublisher
from tests.support.s3 import moto_s3_server, silent_server

MODELS = "{ models { name } }"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OwnPostgres:
    """initdb + pg_ctl in ``folder``; as the postgres user when run as root."""

    def __init__(self, folder: Path) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(found[-1]).parent
        self.folder = folder
        self.data = folder / "data"
        self.port = _free_port()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                pytest.skip("running as root without runuser: initdb cannot run")
            self.prefix = [runuser, "-u", "postgres", "--"]
            shutil.chown(folder, "postgres")

    def _run(self, *args: str) -> None:
        subprocess.run([*self.prefix, *args], check=True, capture_output=True, timeout=60)

    def init_and_start(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        # -l: the server's output goes to a file, not the pipes this test reads to their end.
        log = str(self.folder / "server.log")
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", log, "-o", options, "-w", "start"
        )

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    # Not under pytest's tmp folder: that is private to root, and the server runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="benchstack-pg-"))
    server = OwnPostgres(folder)
    server.init_and_start()
    try:
        yield server
    finally:
        get_engine(server.url).dispose()
        get_engine.cache_clear()
        subprocess.run(
            [
                *server.prefix,
                str(server.bin / "pg_ctl"),
                "-D",
                str(server.data),
                "-m",
                "immediate",
                "stop",
            ],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


def unavailable_count(dependency: str) -> float:
    value = REGISTRY.get_sample_value(
        "benchstack_api_dependency_unavailable_total", {"dependency": dependency}
    )
    return value or 0.0


def test_database_down_is_a_503_json_error_and_counted(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, database_url=own_postgres.url, environment="test")
    with session_scope(settings.effective_database_url) as session:
        token = create_token(session, user_name="alice")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(settings, publish=RecordingPublisher())) as client:
        assert client.post("/graphql", json={"query": MODELS}, headers=headers).status_code == 200
        before = unavailable_count("database")
        own_postgres.stop()
        response = client.post("/graphql", json={"query": MODELS}, headers=headers)
        assert response.status_code == 503, response.text
        assert response.headers["content-type"].startswith("application/json")
        (error,) = response.json()["errors"]
        assert error["message"].startswith("database unavailable")
        assert error["extensions"] == {"code": "DATABASE_UNAVAILABLE"}
        assert unavailable_count("database") == before + 1
        metrics = client.get("/metrics").text
        assert 'benchstack_api_dependency_unavailable_total{dependency="database"}' in metrics
        # Back once the server is: nothing in the API stays broken.
        own_postgres.start()
        assert client.post("/graphql", json={"query": MODELS}, headers=headers).status_code == 200


def test_a_submission_during_a_broker_outage_is_a_503_naming_the_stored_evaluation(
    tmp_path: Path,
) -> None:
    """The real Celery publisher against a port nothing listens on: the evaluation row is
    the outbox. The client gets a 503 "broker unavailable" JSON error carrying the
    evaluation's id, the row stays QUEUED with a reason that says why (the scheduler's
    sweeper publishes it once the broker is back), the outage is counted once, and a retry
    with the same client key reads the evaluation back instead of storing another."""
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        broker_url=f"redis://127.0.0.1:{_free_port()}/0",
        environment="test",
    )
    with TestClient(create_app(settings)) as client:
        api = Api(client, settings, RecordingPublisher())
        api.add_agent()
        token = api.token("alice")
        before = unavailable_count("broker")
        query = """mutation($input: SubmitEvaluationInput!) {
          submitEvaluation(input: $input) { __typename ... on Evaluation { id state reason } } }"""
        quick = {
            "model": "resnet18",
            "framework": "null",
            "settings": {"minDurationS": 0.3},
            "clientKey": "retry-me-1",
        }
        response = api.gql(token, query, {"input": quick})
        assert response.status_code == 503, response.text
        (error,) = response.json()["errors"]
        assert error["extensions"]["code"] == "BROKER_UNAVAILABLE"
        (stored_id,) = error["extensions"]["evaluationIds"]
        assert f"evaluation {stored_id} is stored" in error["message"]
        assert unavailable_count("broker") == before + 1
        retried = api.gql(token, query, {"input": quick})
        assert retried.status_code == 200, retried.text
        created = retried.json()["data"]["submitEvaluation"]
        assert created["__typename"] == "Evaluation" and created["id"] == stored_id
        assert created["state"] == "QUEUED"
        assert created["reason"].startswith("broker unavailable at submission")
        assert "sweeper dispatches it again" in created["reason"]


def _store_settings(tmp_path: Path, endpoint: str, **bounds: float) -> Settings:
    return Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        environment="test",
        s3_endpoint=endpoint,
        s3_access_key="a",
        s3_secret_key="b",
        s3_bucket="readyz",
        s3_probe_timeout_seconds=0.5,
        **{"s3_probe_cache_seconds": 0.0, "readiness_cache_seconds": 0.0, **bounds},
    )


def _object_store(client: TestClient) -> tuple[int, str, float]:
    started = time.monotonic()
    response = client.get("/readyz")
    return response.status_code, response.json()["object_store"], time.monotonic() - started


def test_readyz_says_the_object_store_is_down_quickly(tmp_path: Path) -> None:
    """Stopped, emptied of its bucket, hung: /readyz says so within its probe timeout."""
    down = "error: object store unavailable"
    with moto_s3_server() as moto:
        app = create_app(_store_settings(tmp_path, moto.endpoint), publish=RecordingPublisher())
        store = app.state.deps.store
        with TestClient(app) as client:
            # A fresh S3: the first probe finds no bucket, makes it, and says so.
            assert _object_store(client)[1] == f"{down}: bucket 'readyz' was missing; created it"
            assert _object_store(client)[1] == "ok"
            store.put_bytes("runs/1/a", b"x")
            moto.stop()
            status, said, took = _object_store(client)
            assert status == 503 and took < 2.0
            assert said == f"{down}: cannot connect to {moto.endpoint}: connection refused"
            moto.start()
            assert _object_store(client)[1] == "ok"
            store.client.remove_object("readyz", "runs/1/a")
            store.client.remove_bucket("readyz")
            status, said, _ = _object_store(client)
            assert status == 503 and said.startswith(f"{down}: bucket 'readyz' was missing")
    with silent_server() as endpoint:
        app = create_app(_store_settings(tmp_path, endpoint), publish=RecordingPublisher())
        with TestClient(app) as client:
            status, said, took = _object_store(client)
            assert status == 503 and took < 0.5 * 2 + 1.5
            assert said == f"{down}: {endpoint} did not answer in time"
