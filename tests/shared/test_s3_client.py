"""The bounds of one object-store request, and how its failures are told."""

from __future__ import annotations

import pytest

from shared.s3_client import S3Bounds
from shared.settings import Settings


def test_the_defaults_bound_a_request_to_about_a_minute() -> None:
    bounds = S3Bounds.from_settings(Settings())
    # Pauses: none, then 1, 2 and 4 s; a refused connection costs about 7 s.
    assert bounds.backoffs() == [0.0, 1.0, 2.0, 4.0]
    # 5 tries of 3 s to connect, a read tried twice for 10 s, the pauses.
    assert bounds.worst_case_seconds() == pytest.approx(5 * 3 + 2 * 10 + 7)
    retry = bounds.retry()
    assert retry.total == 4 and retry.read == 1 and not retry.respect_retry_after_header


def test_the_probe_tries_once_within_its_timeout() -> None:
    bounds = S3Bounds.probe(Settings(s3_probe_timeout_seconds=1.5))
    assert bounds.retries == 0 and bounds.backoffs() == []
    assert bounds.worst_case_seconds() == pytest.approx(3.0)


def test_backoff_is_capped() -> None:
    bounds = S3Bounds.from_settings(Settings(s3_retries=10, s3_backoff_seconds=2))
    assert max(bounds.backoffs()) == 8.0


@pytest.mark.parametrize("name", ["s3_connect_timeout_seconds", "s3_probe_timeout_seconds"])
def test_timeouts_must_be_positive(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings(**{name: 0})
