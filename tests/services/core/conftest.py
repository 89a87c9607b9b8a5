"""A trained digits model shared by the accuracy tests (trained once per session)."""

from __future__ import annotations

import pytest

from services.digits.dataset import DigitsArtifacts, prepare


@pytest.fixture(scope="session")
def digits(tmp_path_factory: pytest.TempPathFactory) -> DigitsArtifacts:
    # Four epochs reach ~95 %: enough to make "equal to the plain loop" a real check.
    return prepare(tmp_path_factory.mktemp("digits"), seed=0, epochs=4)
