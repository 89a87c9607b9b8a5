"""Every error body is JSON, a response over the size limit is replaced by a typed error,
and a refused operation is logged shortened, never whole."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.api.request_limits import BAD_REQUEST, RESPONSE_TOO_LARGE
from tests.services.api.conftest import Api, api_with


@pytest.mark.parametrize(
    ("content", "content_type", "said"),
    [
        (b"query=1", "text/plain", "Unsupported content type"),
        (b'{"query": 123}', "application/json", "must be a string"),
        (b"{}", "application/json", "No GraphQL query found"),
    ],
)
def test_a_malformed_request_is_answered_in_json(
    api: Api, content: bytes, content_type: str, said: str
) -> None:
    token = api.token("sender")
    response = api.client.post(
        "/graphql",
        content=content,
        headers={"Authorization": f"Bearer {token}", "content-type": content_type},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    (error,) = response.json()["errors"]
    assert said in error["message"] and error["extensions"]["code"] == BAD_REQUEST


@pytest.fixture
def small_responses(tmp_path: Path) -> Iterator[Api]:
    with api_with(tmp_path, max_response_bytes=2048) as made:
        yield made


def test_a_response_over_the_limit_is_replaced_by_a_typed_error(small_responses: Api) -> None:
    token = small_responses.token("reader")
    small = small_responses.gql(token, "{ models { name } }")
    assert small.status_code == 200 and len(small.content) < 2048
    large = small_responses.gql(token, "{ models { name version framework manifest } }")
    assert large.status_code == 413
    (error,) = large.json()["errors"]
    assert error["extensions"]["code"] == RESPONSE_TOO_LARGE
    assert "BENCHSTACK_MAX_RESPONSE_BYTES" in error["message"]


def test_a_refused_operation_is_logged_shortened(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    token = api.token("sender")
    huge = "{ " + "x" * 1_500_000 + " }"
    with caplog.at_level(logging.INFO):
        response = api.gql(token, huge)
    assert response.status_code == 200 and response.json()["errors"]
    assert caplog.records, "the refusal is logged"
    assert max(len(r.getMessage()) for r in caplog.records) < 2_000


def test_a_chunked_body_over_the_limit_is_refused_while_it_streams(api: Api) -> None:
    token = api.token("sender")
    chunk = b" " * 2**20
    sent: list[int] = []

    def body() -> Iterator[bytes]:
        yield b'{"query": "{ models { name } }", "pad": "'
        for _ in range(8):  # 8 MiB against a 2 MiB limit
            sent.append(1)
            yield chunk
        yield b'"}'

    response = api.client.post(
        "/graphql",
        content=body(),
        headers={"Authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    assert response.status_code == 413
    (error,) = response.json()["errors"]
    assert "sent without Content-Length" in error["message"]


def test_a_chunked_body_under_the_limit_is_answered(api: Api) -> None:
    token = api.token("sender")

    def body() -> Iterator[bytes]:
        yield b'{"query": '
        yield b'"{ models { name } }"}'

    response = api.client.post(
        "/graphql",
        content=body(),
        headers={"Authorization": f"Bearer {token}", "content-type": "application/json"},
    )
    assert response.status_code == 200 and response.json()["data"]["models"]
