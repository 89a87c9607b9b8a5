"""`benchstack submit`'s client (services/cli/remote.py) sends a client key and retries
with the same key while the API answers 503, against a real HTTP server of this test's
own that answers 503 first and then the evaluation."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from services.cli.remote import (
    SUBMIT_TRIES,
    RemoteError,
    RemoteUnavailable,
    answer_of,
    submit_evaluation,
)

CREATED = {"data": {"submitEvaluation": {"__typename": "Evaluation", "id": "e-1"}}}
DOWN = {"errors": [{"message": "broker unavailable", "extensions": {"evaluationIds": ["e-1"]}}]}


@contextmanager
def api_answering(statuses: list[int]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A server answering each POST with the next status (200: an Evaluation); yields its
    URL and the bodies it received."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["content-length"])
            received.append(json.loads(self.rfile.read(length)))
            status = statuses[min(len(received), len(statuses)) - 1]
            body = json.dumps(CREATED if status == 200 else DOWN).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_a_503_is_retried_with_the_same_client_key() -> None:
    with api_answering([503, 503, 200]) as (url, received):
        assert submit_evaluation(url, "t", {"model": "m"}, retry_wait_s=0.01) == "e-1"
    keys = [body["variables"]["input"]["clientKey"] for body in received]
    assert len(keys) == 3 and len(set(keys)) == 1 and len(keys[0]) == 36


def test_each_submission_gets_its_own_key_and_a_given_one_is_kept() -> None:
    with api_answering([200]) as (url, received):
        submit_evaluation(url, "t", {"model": "m"})
        submit_evaluation(url, "t", {"model": "m"})
        submit_evaluation(url, "t", {"model": "m", "clientKey": "mine"})
    keys = [body["variables"]["input"]["clientKey"] for body in received]
    assert keys[0] != keys[1] and keys[2] == "mine"


def test_it_gives_up_after_its_tries_saying_the_server_is_unavailable() -> None:
    with (
        api_answering([503]) as (url, received),
        pytest.raises(RemoteUnavailable, match="answered 503"),
    ):
        submit_evaluation(url, "t", {"model": "m"}, retry_wait_s=0.01)
    assert len(received) == SUBMIT_TRIES


def test_a_union_answer_of_another_type_raises_its_error_naming_the_field() -> None:
    found = {"__typename": "Evaluation", "id": "e-1"}
    assert answer_of(found, "Evaluation", "Comparison") is found
    refused = {"__typename": "InvalidInput", "message": "must be 1 or more", "field": "count"}
    with pytest.raises(RemoteError, match=r"^InvalidInput \(count\): must be 1 or more$"):
        answer_of(refused, "Evaluation")
    with pytest.raises(RemoteError, match=r"^NotFound: no such group$"):
        answer_of({"__typename": "NotFound", "message": "no such group"}, "GroupCancelled")
