"""One settings object for every service; every URL and secret comes from here.

Values come from environment variables prefixed ``BENCHSTACK_`` (or a ``.env`` file).
The defaults describe the embedded mode: an SQLite file and a local folder under
``~/.benchstack``, no broker, so ``benchstack bench`` works on a fresh machine.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = frozenset({"", "change-me", "changeme", "secret", "dev-secret-change-me"})

DEFAULT_DATA_DIR = Path.home() / ".benchstack"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHSTACK_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    data_dir: Path = DEFAULT_DATA_DIR
    # Empty means "the SQLite file inside data_dir" (embedded mode).
    database_url: str = ""
    broker_url: str = "redis://127.0.0.1:6379/0"
    # Empty endpoint means "a local folder inside data_dir" as the object store.
    s3_endpoint: str = ""
    s3_access_key: str = ""
    s3_secret_key: str = ""
    s3_bucket: str = "benchstack"
    s3_secure: bool = False
    s3_region: str = "us-east-1"
    secret_key: str = "dev-secret-change-me"
    otlp_endpoint: str = ""
    api_url: str = "http://127.0.0.1:8000"
    # host:port of the Triton (KServe-V2) server the triton backend talks to when a
    # submission's backend options name no "url"; empty keeps the backend's own default.
    triton_url: str = ""
    agent_heartbeat_seconds: float = Field(default=10.0, gt=0)
    # An agent is live while its last heartbeat is younger than this many heartbeats.
    agent_live_heartbeats: float = Field(default=3.0, gt=1)
    # Samples per preprocessing shard: the unit of parallel work and of reuse.
    shard_samples: int = Field(default=64, ge=1)

    @model_validator(mode="after")
    def _refuse_placeholder_secrets(self) -> Settings:
        # A production deployment with a default secret is worse than one that will not start.
        if self.environment == "production":
            if self.secret_key in PLACEHOLDER_SECRETS:
                raise ValueError(
                    "BENCHSTACK_SECRET_KEY is a placeholder; set a real secret in production"
                )
            if self.s3_endpoint and self.s3_secret_key in PLACEHOLDER_SECRETS:
                raise ValueError(
                    "BENCHSTACK_S3_SECRET_KEY is a placeholder; set a real secret in production"
                )
        return self

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'benchstack.db'}"

    @property
    def objects_dir(self) -> Path:
        return self.data_dir / "objects"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
