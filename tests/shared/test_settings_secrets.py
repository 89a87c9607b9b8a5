"""Production refuses placeholder secrets anywhere they hide; repr never shows them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from shared.settings import Settings

REAL = {
    "environment": "production",
    "secret_key": "s3cr3t-0f-64-random-chars",
    "database_url": "postgresql+psycopg2://benchstack:Xq7-long-pass@db:5432/benchstack",
    "broker_url": "redis://:Br0ker-pass@redis:6379/0",
    "s3_endpoint": "minio:9000",
    "s3_access_key": "benchstack-writer",
    "s3_secret_key": "M1n10-real-secret",
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only what each test passes counts: no BENCHSTACK_* variable of the shell or CI.
    for name in list(os.environ):
        if name.startswith("BENCHSTACK_"):
            monkeypatch.delenv(name)


def make(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **{**REAL, **overrides})  # type: ignore[call-arg]


def test_real_secrets_start_in_production() -> None:
    assert make().environment == "production"
    # No password in a URL is nothing to refuse (the broker may be on a private network).
    assert make(broker_url="redis://redis:6379/0").broker_url
    # Without an S3 endpoint the S3 keys are unused: empty is fine.
    assert make(s3_endpoint="", s3_access_key="", s3_secret_key="").s3_endpoint == ""


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"secret_key": "change-me"}, "BENCHSTACK_SECRET_KEY"),
        (
            {"database_url": "postgresql+psycopg2://benchstack:change-me@db/benchstack"},
            "BENCHSTACK_DATABASE_URL",
        ),
        ({"database_url": "postgresql://postgres:postgres@db/x"}, "BENCHSTACK_DATABASE_URL"),
        ({"database_url": "postgresql://u:password@db/x"}, "BENCHSTACK_DATABASE_URL"),
        ({"broker_url": "redis://:change-me@redis:6379/0"}, "BENCHSTACK_BROKER_URL"),
        ({"broker_url": "amqp://guest:secret@rabbit:5672//"}, "BENCHSTACK_BROKER_URL"),
        ({"s3_access_key": "minioadmin"}, "BENCHSTACK_S3_ACCESS_KEY"),
        ({"s3_access_key": "change-me"}, "BENCHSTACK_S3_ACCESS_KEY"),
        ({"s3_secret_key": "minioadmin"}, "BENCHSTACK_S3_SECRET_KEY"),
        ({"s3_secret_key": ""}, "BENCHSTACK_S3_SECRET_KEY"),
    ],
)
def test_placeholders_are_refused_in_production(overrides: dict[str, str], named: str) -> None:
    with pytest.raises(ValidationError) as caught:
        make(**overrides)
    message = str(caught.value)
    assert named in message and "placeholder" in message
    # The error names where the placeholder is, never a secret value.
    for value in REAL.values():
        if value not in ("production", "minio:9000"):
            assert value not in message


@pytest.mark.parametrize("environment", ["development", "test"])
def test_development_and_test_stay_permissive(environment: str) -> None:
    settings = make(
        environment=environment,
        secret_key="change-me",
        database_url="postgresql://postgres:postgres@127.0.0.1/x",
        broker_url="redis://:password@127.0.0.1:6379/0",
        s3_access_key="minioadmin",
        s3_secret_key="minioadmin",
    )
    assert settings.environment == environment


def test_repr_and_str_mask_secrets() -> None:
    settings = make()
    for text in (repr(settings), str(settings)):
        for secret in (
            "s3cr3t-0f-64-random-chars",
            "Xq7-long-pass",
            "Br0ker-pass",
            "benchstack-writer",
            "M1n10-real-secret",
        ):
            assert secret not in text
        # What is not secret stays readable, so the repr is still useful in a log.
        assert "db:5432/benchstack" in text and "redis:6379/0" in text
        assert "benchstack:**********@db" in text
    # The values themselves are untouched.
    assert settings.secret_key == REAL["secret_key"]
    assert settings.database_url == REAL["database_url"]


def test_dataset_and_model_folders_default_under_data_dir(tmp_path: Path) -> None:
    settings = make(environment="test", data_dir=tmp_path)
    assert settings.datasets_dir == tmp_path / "datasets"
    assert settings.models_dir == tmp_path / "models"
    assert settings.max_samples == 100_000
    moved = make(environment="test", data_dir=tmp_path, models_dir=tmp_path / "m")
    assert moved.models_dir == tmp_path / "m" and moved.datasets_dir == tmp_path / "datasets"
