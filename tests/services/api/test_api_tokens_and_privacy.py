"""Over HTTP: expired and revoked tokens get a 401 that says why; a private registered model
answers another user exactly as a missing one; /metrics and /docs follow their settings."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from services.api.app import create_app
from services.api.auth import create_token, revoke_token
from services.core.catalogue import CATALOGUE_DIR
from shared.db.accounts import ApiToken
from shared.db.clock import utcnow
from shared.db.session import session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, RecordingPublisher

MODELS = "query($name: String) { models(name: $name) { name version origin shared } }"
REGISTER = """mutation($m: String!, $shared: Boolean!) {
  registerModel(manifest: $m, shared: $shared) {
    __typename ... on Model { name shared } ... on UserError { field message } } }"""


def _manifest(name: str) -> str:
    return (CATALOGUE_DIR / "resnet18.yaml").read_text().replace("name: resnet18", f"name: {name}")


def _submit(api: Api, token: str, query: str, model: str) -> dict[str, Any]:
    variables = {"input": {"model": model, "framework": "null", "samples": 4}}
    result: dict[str, Any] = api.data(token, query, variables)["submitEvaluation"]
    return result


def test_an_expired_token_gets_401_saying_it_expired(api: Api) -> None:
    with session_scope(api.settings.effective_database_url) as session:
        token = create_token(session, user_name="alice", expires_in=timedelta(days=1))
    assert api.gql(token, MODELS).status_code == 200
    with session_scope(api.settings.effective_database_url) as session:
        session.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)))
    response = api.gql(token, MODELS)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    detail = response.json()["detail"]
    assert "expired at" in detail and token[:10] in detail and "token create" in detail
    assert token not in detail  # the secret part is never echoed back


def test_a_revoked_token_gets_401_saying_it_was_revoked(api: Api) -> None:
    token = api.token("alice")
    other = api.token("alice")
    assert api.gql(token, MODELS).status_code == 200
    with session_scope(api.settings.effective_database_url) as session:
        revoke_token(session, token[:10])
    response = api.gql(token, MODELS)
    assert response.status_code == 401
    assert "revoked at" in response.json()["detail"]
    # Revoking one token leaves the user's other tokens working.
    assert api.gql(other, MODELS).status_code == 200


@pytest.mark.parametrize(
    ("header", "says"),
    [
        (None, "Bearer token is required"),
        ("Bearer bst_not-a-real-token", "not valid"),
        ("Bearer something-else", "not valid"),
    ],
)
def test_a_missing_or_unknown_token_gets_401_json(api: Api, header: str | None, says: str) -> None:
    headers = {"Authorization": header} if header else {}
    response = api.client.post("/graphql", json={"query": MODELS}, headers=headers)
    assert response.status_code == 401
    assert says in response.json()["detail"]


def test_a_revoked_token_is_refused_on_the_log_route_too(api: Api) -> None:
    token = api.token("alice")
    with session_scope(api.settings.effective_database_url) as session:
        revoke_token(session, token)
    response = api.client.get(
        "/runs/x/logs/mlperf_log_summary.txt", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_a_private_model_answers_others_as_a_missing_one(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    done = api.data(alice, REGISTER, {"m": _manifest("alice-net"), "shared": False})
    assert done["registerModel"] == {"__typename": "Model", "name": "alice-net", "shared": False}

    # Its owner lists it and runs it.
    own = api.data(alice, MODELS, {"name": "alice-net"})["models"]
    assert [(m["name"], m["origin"], m["shared"]) for m in own] == [
        ("alice-net", "registered", False)
    ]
    assert _submit(api, alice, submit_query(), "alice-net")["__typename"] == "Evaluation"

    # Anyone else: not in the list, not readable by name, not runnable; the refusal is the
    # one a name nobody registered gets, and the known names do not reveal it.
    everything = api.data(bob, MODELS)["models"]
    assert "alice-net" not in {m["name"] for m in everything}
    assert api.data(bob, MODELS, {"name": "alice-net"})["models"] == []
    hidden = _submit(api, bob, submit_query(), "alice-net")
    missing = _submit(api, bob, submit_query(), "nobody-net")
    assert hidden["__typename"] == missing["__typename"] == "UnknownModel"
    assert hidden["known"] == missing["known"] and "alice-net" not in hidden["known"]
    assert hidden["message"] == missing["message"].replace("nobody-net", "alice-net")


def test_a_shared_model_is_listed_and_runnable_by_everyone(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    done = api.data(alice, REGISTER, {"m": _manifest("team-net"), "shared": True})
    assert done["registerModel"]["shared"] is True
    listed = api.data(bob, MODELS, {"name": "team-net"})["models"]
    assert [(m["name"], m["shared"]) for m in listed] == [("team-net", True)]
    assert _submit(api, bob, submit_query(), "team-net")["__typename"] == "Evaluation"


def test_registration_is_private_by_default(api: Api) -> None:
    alice, bob = api.token("alice"), api.token("bob")
    query = "mutation($m: String!) { registerModel(manifest: $m) { ... on Model { shared } } }"
    assert api.data(alice, query, {"m": _manifest("quiet-net")})["registerModel"] == {
        "shared": False
    }
    assert api.data(bob, MODELS, {"name": "quiet-net"})["models"] == []


def _client(tmp_path: Path, **overrides: Any) -> TestClient:
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        s3_endpoint="",
        **overrides,
    )
    return TestClient(create_app(settings, publish=RecordingPublisher()))


def test_production_hides_docs_and_keeps_metrics(tmp_path: Path) -> None:
    with _client(tmp_path, environment="production", secret_key="a-real-secret-0123") as client:
        for path in ("/docs", "/redoc", "/openapi.json"):
            assert client.get(path).status_code == 404, path
        assert client.get("/metrics").status_code == 200


def test_development_shows_the_description_and_no_page_from_a_cdn(tmp_path: Path) -> None:
    with _client(tmp_path, environment="development") as client:
        assert client.get("/openapi.json").json()["info"]["title"] == "benchstack"
        # FastAPI's /docs and /redoc load Swagger UI and ReDoc from a CDN: not served.
        for path in ("/docs", "/redoc"):
            assert client.get(path).status_code == 404, path
        page = client.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200 and "cdn." not in page.text.lower()


def test_exposure_settings_override_the_defaults(tmp_path: Path) -> None:
    with _client(
        tmp_path,
        environment="production",
        secret_key="a-real-secret-0123",
        expose_docs=True,
        expose_metrics=False,
    ) as client:
        assert client.get("/metrics").status_code == 404
        assert client.get("/openapi.json").status_code == 200
