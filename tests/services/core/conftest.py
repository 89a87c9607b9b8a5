"""A trained digits model shared by the accuracy tests (trained once per session), and a
stored report of a short null-backend run for the report tests."""

from __future__ import annotations

from typing import Any

import pytest

from services.core.request import RunRequest
from services.digits.dataset import DigitsArtifacts, prepare
from services.embedded.bench import run_bench
from shared.settings import Settings


@pytest.fixture(scope="session")
def digits(tmp_path_factory: pytest.TempPathFactory) -> DigitsArtifacts:
    # Four epochs reach ~95 %: enough to make "equal to the plain loop" a real check.
    return prepare(tmp_path_factory.mktemp("digits"), seed=0, epochs=4)


@pytest.fixture
def null_run_report(settings: Settings) -> dict[str, Any]:
    """The stored report of a 0.3 s Offline run of the tiny CNN on the null backend."""
    return run_bench(
        RunRequest(
            model="tests/fixtures/tiny_cnn.yaml",
            framework="null",
            settings={"min_duration_s": 0.3},
            samples=16,
            backend_options={"service_time_ms": 1.0},
        ),
        settings,
    )
