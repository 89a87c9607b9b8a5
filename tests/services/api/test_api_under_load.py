"""What the API does to stay fast under many clients, and what that must not change."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from services.api.app import create_app
from services.api.auth import create_token, hash_token
from services.stack.entry import api_worker_count, usable_cpus
from shared.db.accounts import ApiToken
from shared.db.clock import utcnow
from shared.db.models import Metric, Run
from shared.db.session import get_engine, session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, RecordingPublisher
from tests.support.ephemeral import free_port

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
WITH_RUNS = """query($id: String!) { evaluation(id: $id) {
  id runs { id validity metrics { name value unit } } } }"""


def test_a_revoked_token_stops_working_within_the_cache_time(tmp_path: Path) -> None:
    ttl_s = 0.5
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        environment="test",
        api_token_cache_seconds=ttl_s,
    )
    with TestClient(create_app(settings, publish=RecordingPublisher())) as client:
        with session_scope(settings.effective_database_url) as session:
            token = create_token(session, user_name="alice")
        headers = {"Authorization": f"Bearer {token}"}
        query = {"query": "{ models { name } }"}
        assert client.post("/graphql", json=query, headers=headers).status_code == 200
        with session_scope(settings.effective_database_url) as session:
            row = session.query(ApiToken).filter_by(token_hash=hash_token(token)).one()
            row.revoked_at = utcnow()
        time.sleep(ttl_s + 0.1)
        assert client.post("/graphql", json=query, headers=headers).status_code == 401


def _add_runs(settings: Settings, evaluation_id: str, count: int) -> None:
    with session_scope(settings.effective_database_url) as session:
        for _ in range(count):
            run = Run(
                id=str(uuid.uuid4()),
                evaluation_id=evaluation_id,
                model_name="resnet18",
                model_version="1.0.0",
                framework="null",
                framework_version="0",
                scenario="Offline",
                batch_size=1,
                dataset="synthetic",
                validity="VALID",
                manifest={},
                settings={},
                environment={},
                report={},
                log_prefix="",
            )
            run.metrics = [
                Metric(name="samples_per_second", value=1.0, unit="samples/s"),
                Metric(name="latency_p99", value=2.0, unit="ms"),
            ]
            session.add(run)


@pytest.fixture
def count_statements(api: Api) -> Iterator[Callable[[Callable[[], Any]], int]]:
    engine = get_engine(api.settings.effective_database_url)
    statements: list[str] = []

    def record(*args: Any) -> None:
        statements.append(args[2])

    event.listen(engine, "before_cursor_execute", record)

    def counted(action: Callable[[], Any]) -> int:
        statements.clear()
        action()
        return len(statements)

    yield counted
    event.remove(engine, "before_cursor_execute", record)


def test_runs_and_their_metrics_cost_the_same_queries_however_many(
    api: Api,
    submit_query: Callable[[], str],
    count_statements: Callable[[Callable[[], Any]], int],
) -> None:
    api.add_agent()
    token = api.token("alice")
    submit = submit_query()
    ids = [api.data(token, submit, {"input": QUICK})["submitEvaluation"]["id"] for _ in "ab"]
    _add_runs(api.settings, ids[0], 1)
    _add_runs(api.settings, ids[1], 4)

    def read(evaluation_id: str) -> Callable[[], Any]:
        return lambda: api.data(token, WITH_RUNS, {"id": evaluation_id})

    read(ids[0])()  # the first request also looks up the token; later ones use the cache
    one_run, four_runs = count_statements(read(ids[0])), count_statements(read(ids[1]))
    assert len(api.data(token, WITH_RUNS, {"id": ids[1]})["evaluation"]["runs"]) == 4
    assert one_run == four_runs


def test_an_evaluation_with_its_runs_takes_one_connection_like_one_without(
    api: Api, submit_query: Callable[[], str]
) -> None:
    # The resolver loads the runs in its own session and primes the runs loader: no second
    # trip to a worker thread and the pool (half the latency of this query under load).
    api.add_agent()
    token = api.token("alice")
    evaluation_id = api.data(token, submit_query(), {"input": QUICK})["submitEvaluation"]["id"]
    _add_runs(api.settings, evaluation_id, 2)
    engine = get_engine(api.settings.effective_database_url)
    checkouts: list[object] = []

    def record(*args: Any) -> None:
        checkouts.append(args[0])

    event.listen(engine, "checkout", record)
    try:
        without = """query($id: String!) { evaluation(id: $id) { id } }"""
        api.data(token, without, {"id": evaluation_id})
        plain, checkouts[:] = len(checkouts), []
        found = api.data(token, WITH_RUNS, {"id": evaluation_id})["evaluation"]
    finally:
        event.remove(engine, "checkout", record)
    assert len(found["runs"]) == 2 and all(len(r["metrics"]) == 2 for r in found["runs"])
    assert len(checkouts) == plain


def test_api_worker_count_follows_the_setting() -> None:
    assert api_worker_count(3) == 3
    assert api_worker_count(0) == usable_cpus()


def _counter(text: str, route: str) -> float:
    pattern = rf'benchstack_api_requests_total\{{[^}}]*route="{re.escape(route)}"[^}}]*\}} (\S+)'
    return sum(float(v) for v in re.findall(pattern, text))


def test_several_api_processes_report_their_requests_together(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "BENCHSTACK_ENVIRONMENT": "test",
        "BENCHSTACK_DATA_DIR": str(tmp_path),
        "BENCHSTACK_DATABASE_URL": f"sqlite:///{tmp_path / 'api.db'}",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    argv = [sys.executable, "-m", "services.stack.entry", "api", "--port", str(port)]
    log = (tmp_path / "api.log").open("wb")
    server = subprocess.Popen(
        [*argv, "--workers", "2"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "api.log").read_text()[-2000:]
            time.sleep(0.2)
        # A new connection per request, so both processes get some of them.
        calls = 30
        for _ in range(calls):
            assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        answers = {
            _counter(httpx.get(url + "/metrics", timeout=5).text, "/healthz") for _ in range(6)
        }
        # Whichever process answers the scrape, it counts every process's requests
        # (the readiness polling above adds at least one more).
        assert all(total >= calls + 1 for total in answers), answers
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()
