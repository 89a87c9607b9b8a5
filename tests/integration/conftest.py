"""Fixtures for tests against real servers: Postgres and Redis (already running, e.g.
started by .ci/run), moto's S3 server on loopback, and the services as real processes.

Set BENCHSTACK_REQUIRE_SERVERS=1 (CI does) to fail instead of skip when Postgres or
Redis cannot be reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from services.stack.manager import ENTRY_MODULE, ServiceSpec, default_services
from tests.support.ephemeral import EphemeralStack

pytestmark = pytest.mark.integration


def _servers_reachable(stack: EphemeralStack) -> str:
    """An empty string when Postgres and Redis answer, else what is missing."""
    try:
        import redis
        from sqlalchemy import create_engine, text

        engine = create_engine(stack.admin_url, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        redis.Redis.from_url(stack.broker_url, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure to connect means "no servers here"
        return f"{exc.__class__.__name__}: {exc}"
    return ""


@pytest.fixture(scope="session")
def stack() -> Iterator[EphemeralStack]:
    yield from running_stack(EphemeralStack())


class TorchStack(EphemeralStack):
    """The ephemeral stack with a torch agent in place of the null one."""

    def start_services(
        self, specs: Any = None, *, name: str = "main", wait_api: bool = True
    ) -> Any:
        specs = specs or default_services(
            port=self.api_port, frameworks=["torch"], preprocess_concurrency=1
        )
        return super().start_services(specs, name=name, wait_api=wait_api)


def running_stack(ephemeral: EphemeralStack) -> Iterator[EphemeralStack]:
    """Start the stack's services and wait for an agent; skip or fail without servers."""
    problem = _servers_reachable(ephemeral)
    if problem:
        if os.environ.get("BENCHSTACK_REQUIRE_SERVERS") == "1":
            pytest.fail(f"Postgres/Redis unreachable: {problem}")
        pytest.skip(f"Postgres/Redis unreachable: {problem}")
    ephemeral.start_servers()
    try:
        ephemeral.start_services()
        ephemeral.wait_for_agents(1)
        yield ephemeral
    finally:
        ephemeral.close()


@pytest.fixture(scope="session")
def make_token(stack: EphemeralStack) -> Callable[[str], str]:
    from services.api.auth import create_token
    from shared.db.session import session_scope

    def make(user: str) -> str:
        with session_scope(stack.database_url) as session:
            return create_token(session, user_name=user, label="test")

    return make


class GraphQLClient:
    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url
        self.token = token

    def post(self, query: str, variables: dict[str, Any] | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.post(
            self.base_url + "/graphql",
            json={"query": query, "variables": variables or {}},
            headers=headers,
            timeout=30,
        )

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self.post(query, variables)
        assert response.status_code == 200, response.text
        body = response.json()
        assert not body.get("errors"), body["errors"]
        data: dict[str, Any] = body["data"]
        return data

    def until_final(self, query: str, evaluation_id: str, timeout_s: float) -> dict[str, Any]:
        """``query``'s ``evaluation`` (asked with ``id``), polled until it is final."""
        deadline = time.monotonic() + timeout_s
        while True:
            evaluation: dict[str, Any] = self(query, {"id": evaluation_id})["evaluation"]
            if evaluation["state"] in {"SUCCEEDED", "FAILED", "CANCELLED"}:
                return evaluation
            assert time.monotonic() < deadline, evaluation
            time.sleep(0.5)

    def follow(self, evaluation_id: str, timeout_s: float = 90.0) -> list[dict[str, Any]]:
        """Every update of evaluationUpdates(id) over graphql-transport-ws, until it ends."""
        return asyncio.run(asyncio.wait_for(self._follow(evaluation_id), timeout_s))

    async def _follow(self, evaluation_id: str) -> list[dict[str, Any]]:
        import websockets

        url = self.base_url.replace("http://", "ws://") + "/graphql"
        updates: list[dict[str, Any]] = []
        async with websockets.connect(url, subprotocols=["graphql-transport-ws"]) as ws:  # type: ignore[list-item]
            await ws.send(
                json.dumps(
                    {
                        "type": "connection_init",
                        "payload": {"Authorization": f"Bearer {self.token}"},
                    }
                )
            )
            ack = json.loads(await ws.recv())
            assert ack["type"] == "connection_ack", ack
            await ws.send(
                json.dumps(
                    {
                        "id": "1",
                        "type": "subscribe",
                        "payload": {
                            "query": "subscription($id: String!) { evaluationUpdates(id: $id) "
                            "{ id state reason shardsReady shardsTotal preprocessReused } }",
                            "variables": {"id": evaluation_id},
                        },
                    }
                )
            )
            while True:
                message = json.loads(await ws.recv())
                if message["type"] == "next":
                    assert not message["payload"].get("errors"), message
                    updates.append(message["payload"]["data"]["evaluationUpdates"])
                elif message["type"] == "complete":
                    return updates
                else:
                    raise AssertionError(f"unexpected message {message}")


@pytest.fixture(scope="session")
def client_for(
    stack: EphemeralStack, make_token: Callable[[str], str]
) -> Callable[[str], GraphQLClient]:
    def make(user: str) -> GraphQLClient:
        return GraphQLClient(stack.api_url, make_token(user))

    return make


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Attach the services' logs to a failing integration test's report."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and "stack" in getattr(item, "funcargs", {}):
        report.sections.append(("service logs", item.funcargs["stack"].logs()))


@pytest.fixture(scope="module")
def torch_stack() -> Iterator[EphemeralStack]:
    """A stack with a torch agent, one per test module that asks for it."""
    yield from running_stack(TorchStack())


@pytest.fixture(scope="module")
def torch_client(torch_stack: EphemeralStack) -> GraphQLClient:
    """A client of the torch stack, as a user of its own."""
    from services.api.auth import create_token
    from shared.db.session import session_scope

    with session_scope(torch_stack.database_url) as session:
        token = create_token(session, user_name="torch-user", label="test")
    return GraphQLClient(torch_stack.api_url, token)


def _threaded_agents(client: GraphQLClient) -> set[int]:
    agents = client("{ agents { framework settings } }")["agents"]
    return {
        a["settings"].get("intra_op_threads", 0)
        for a in agents
        if a["framework"] == "null" and a["settings"].get("intra_op_threads")
    }


@pytest.fixture(scope="module")
def fleet(
    stack: EphemeralStack, client_for: Callable[[str], GraphQLClient]
) -> Iterator[GraphQLClient]:
    """The session's stack plus two inference workers with 1 and 2 threads."""
    worker = [sys.executable, "-m", ENTRY_MODULE, "worker", "inference"]
    specs = [
        ServiceSpec(
            f"inference-t{n}",
            [*worker, "--framework", "null", "--framework", "onnxruntime", "--threads", str(n)],
        )
        for n in (1, 2)
    ]
    extra = stack.start_services(specs, name="threaded")
    client = client_for("fleet-owner")
    try:
        deadline = time.monotonic() + 60
        while _threaded_agents(client) != {1, 2}:
            if time.monotonic() > deadline:
                raise RuntimeError(f"threaded workers did not register:\n{stack.logs()}")
            time.sleep(0.3)
        yield client
    finally:
        extra.stop(grace_s=10)
