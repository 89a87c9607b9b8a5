"""Settings is one class joined from themed groups: the names and variables stay as they were."""

from __future__ import annotations

import pytest
from pydantic_settings import BaseSettings

from shared.settings import Settings

GROUPS = [base for base in Settings.__mro__[1:] if base.__module__.startswith("shared.settings_")]


def test_settings_is_joined_from_the_groups() -> None:
    assert {g.__name__ for g in GROUPS} == {
        "ApiSettings",
        "DataLimits",
        "MeasurementSettings",
        "RequestLimits",
        "SchedulingSettings",
        "StorageSettings",
    }


def test_no_field_is_declared_by_two_groups() -> None:
    # A name declared twice would silently take the value of whichever base comes first.
    seen: dict[str, str] = {}
    for group in [*GROUPS, Settings]:
        for name in group.__annotations__:
            if name == "model_config":
                continue
            assert name not in seen, f"{name} declared by {seen[name]} and {group.__name__}"
            seen[name] = group.__name__
    assert set(seen) == set(Settings.model_fields)


@pytest.mark.parametrize(
    ("variable", "field", "value", "expected"),
    [
        ("BENCHSTACK_S3_BUCKET", "s3_bucket", "runs", "runs"),
        ("BENCHSTACK_API_WORKERS", "api_workers", "3", 3),
        ("BENCHSTACK_MAX_RUN_SECONDS", "max_run_seconds", "12.5", 12.5),
        ("BENCHSTACK_SHARD_SAMPLES", "shard_samples", "7", 7),
        ("BENCHSTACK_USER_MAX_QUEUED", "user_max_queued", "4", 4),
        ("BENCHSTACK_MAX_QUERY_DEPTH", "max_query_depth", "9", 9),
        ("BENCHSTACK_TRITON_URL", "triton_url", "h:8001", "h:8001"),
    ],
)
def test_each_group_reads_its_variables(
    monkeypatch: pytest.MonkeyPatch, variable: str, field: str, value: str, expected: object
) -> None:
    monkeypatch.setenv(variable, value)
    assert getattr(Settings(), field) == expected


def test_a_group_bound_is_checked_on_settings() -> None:
    with pytest.raises(ValueError, match="max_query_depth"):
        Settings(max_query_depth=0)
    with pytest.raises(ValueError, match="user_limit_overrides"):
        Settings(user_limit_overrides={"ci": {"user_max_nothing": 1}})
    assert issubclass(Settings, BaseSettings)
