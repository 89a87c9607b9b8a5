"""An object store outage makes a task wait and retry, not fail its evaluation, for long
enough to outlast a minute's outage even when every jittered countdown draws zero."""

from __future__ import annotations

from typing import Any

import pytest

from shared.s3_client import S3Bounds
from shared.settings import Settings
from shared.storage import ObjectStoreUnavailable
from shared.task_guard import RETRY_OPTIONS, TRANSIENT_ERRORS, fail_evaluation_on_error


def test_an_object_store_outage_is_retried_not_failed() -> None:
    assert ObjectStoreUnavailable in RETRY_OPTIONS["autoretry_for"]
    failed: list[str] = []

    @fail_evaluation_on_error("inference")
    def task(payload: dict[str, Any]) -> None:
        failed.append("ran")
        raise ObjectStoreUnavailable("cannot connect to minio:9000: connection refused")

    # Re-raised for Celery's autoretry; the evaluation is not touched (no database here).
    with pytest.raises(TRANSIENT_ERRORS):
        task({"evaluation_id": "e1"})
    assert failed == ["ran"]


def test_the_retry_budget_outlasts_a_minute_of_outage() -> None:
    tries = RETRY_OPTIONS["max_retries"] + 1
    # Each try that meets a stopped S3 spends its own retries' pauses before it raises:
    # a floor that Celery's full jitter (countdowns drawn from 0 up) cannot take away.
    floor = tries * sum(S3Bounds.from_settings(Settings()).backoffs())
    assert floor >= 60
    # Celery's countdowns add on average half of 2, 4, 8, ... capped at 60 s.
    factor, cap = RETRY_OPTIONS["retry_backoff"], RETRY_OPTIONS["retry_backoff_max"]
    countdowns = [min(cap, factor * 2**n) for n in range(RETRY_OPTIONS["max_retries"])]
    assert floor + sum(countdowns) / 2 >= 180
