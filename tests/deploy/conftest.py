"""Fixtures for the deployment files: compose.yaml, Dockerfile, .dockerignore and k8s/.

These tests read files only; no Docker engine or cluster is needed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def pyproject() -> dict[str, Any]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="session")
def project_extras(pyproject: dict[str, Any]) -> set[str]:
    return set(pyproject["project"].get("optional-dependencies", {}))
