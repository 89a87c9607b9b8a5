"""One settings object for every service; every URL and secret comes from here.

Values come from environment variables prefixed ``BENCHSTACK_`` (or a ``.env`` file).
The defaults describe the embedded mode: an SQLite file and a local folder under
``~/.benchstack``, no broker, so ``benchstack bench`` works on a fresh machine.

The fields live in themed groups under ``shared/settings_groups/`` (storage, API, measurement,
data, scheduling, request limits); ``Settings`` joins them into one class, so every field
keeps its name and its ``BENCHSTACK_`` variable and callers still read ``settings.xxx``.
A new setting goes in the group of its theme, or here when none fits, with a comment.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from shared.settings_groups.api import ApiSettings
from shared.settings_groups.data import DataLimits
from shared.settings_groups.measurement import MeasurementSettings
from shared.settings_groups.request_limits import RequestLimits
from shared.settings_groups.scheduling import SchedulingSettings
from shared.settings_groups.storage import StorageSettings

PLACEHOLDER_SECRETS = frozenset(
    {
        "",
        "change-me",
        "changeme",
        "secret",
        "dev-secret-change-me",
        "minioadmin",
        "password",
        "postgres",
    }
)
# Fields whose value is, or holds, a secret: never shown in clear by repr() or str().
SECRET_FIELDS = ("secret_key", "s3_access_key", "s3_secret_key")
URL_FIELDS = ("database_url", "broker_url")
MASK = "**********"

DEFAULT_DATA_DIR = Path.home() / ".benchstack"


# pydantic orders the fields from the last base to the first, then this class's own: the
# groups are listed backwards so that the fields keep the order of the groups' themes.
class Settings(
    RequestLimits,
    SchedulingSettings,
    DataLimits,
    MeasurementSettings,
    ApiSettings,
    StorageSettings,
):
    model_config = SettingsConfigDict(env_prefix="BENCHSTACK_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    data_dir: Path = DEFAULT_DATA_DIR
    # Where the datasets an API submission may name live ("imagenet/val" is
    # <datasets_dir>/imagenet/val); a submission can name nothing outside it.
    datasets_dir: Path = Field(default_factory=lambda data: Path(data["data_dir"]) / "datasets")
    # Where relative model file paths of manifests sent through the API resolve.
    models_dir: Path = Field(default_factory=lambda data: Path(data["data_dir"]) / "models")
    secret_key: str = "dev-secret-change-me"
    otlp_endpoint: str = ""
    api_url: str = "http://127.0.0.1:8000"
    # host:port of the Triton (KServe-V2) server the triton backend talks to from the
    # stack (API submissions cannot name one); empty keeps the backend's own default.
    triton_url: str = ""
    # Whether the API serves Prometheus metrics at /metrics (scrapers need it; turn it off
    # where the API faces the internet and nothing scrapes it) and its OpenAPI description
    # at /openapi.json (a map of the API: hidden in production; /docs and /redoc, which
    # would load Swagger UI and ReDoc from a CDN, are never served).
    expose_metrics: bool = True
    expose_docs: bool = Field(
        default_factory=lambda data: data.get("environment", "development") != "production"
    )

    @model_validator(mode="after")
    def _refuse_placeholder_secrets(self) -> Settings:
        # A production deployment with a default secret is worse than one that will not start.
        # Development and test modes stay permissive. Messages never quote the secret.
        if self.environment != "production":
            return self
        checks: list[tuple[str, str | None]] = [
            ("BENCHSTACK_SECRET_KEY", self.secret_key),
            ("the password in BENCHSTACK_DATABASE_URL", _database_password(self.database_url)),
            ("the password in BENCHSTACK_BROKER_URL", _url_password(self.broker_url)),
        ]
        if self.s3_endpoint:
            checks += [
                ("BENCHSTACK_S3_ACCESS_KEY", self.s3_access_key),
                ("BENCHSTACK_S3_SECRET_KEY", self.s3_secret_key),
            ]
        for name, value in checks:
            # None: the URL carries no password (e.g. the embedded SQLite file).
            if value is not None and value.strip().lower() in PLACEHOLDER_SECRETS:
                raise ValueError(f"{name} is a placeholder; set a real secret in production")
        return self

    def __repr_args__(self) -> Any:
        # repr(settings) ends up in logs and tracebacks: mask secrets and URL passwords.
        for name, value in super().__repr_args__():
            if name in SECRET_FIELDS and value:
                yield name, MASK
            elif name in URL_FIELDS and isinstance(value, str):
                yield name, _mask_url_password(value)
            else:
                yield name, value

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'benchstack.db'}"

    @property
    def objects_dir(self) -> Path:
        return self.data_dir / "objects"


def _database_password(url: str) -> str | None:
    if not url:
        return None
    try:
        return make_url(url).password
    except (ArgumentError, ValueError):
        # Not a URL SQLAlchemy can read: the engine will say so; nothing to check here.
        return None


def _url_password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _mask_url_password(url: str) -> str:
    """``scheme://user:SECRET@host`` -> ``scheme://user:**********@host``."""
    password = _url_password(url)
    if not password:
        return url
    parts = urlsplit(url)
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return parts._replace(netloc=f"{user}:{MASK}@{hostinfo}").geturl()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
