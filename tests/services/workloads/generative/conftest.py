from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiny_llm import tiny_llm


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One saved tiny Llama for the session's tests (building it takes a few seconds)."""
    return tiny_llm(tmp_path_factory.mktemp("tiny-llm"))
