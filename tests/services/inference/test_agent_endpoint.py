"""An agent that serves an OpenAI-compatible endpoint says so in its settings (recorded
with the agent and every run it measures), from BENCHSTACK_AGENT_ENDPOINT_URL and _MODEL."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.inference.agent import Agent
from shared.settings import Settings


def test_the_endpoint_is_in_the_agent_s_settings_only_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BENCHSTACK_AGENT_ENDPOINT_URL", "http://127.0.0.1:8000")
    monkeypatch.setenv("BENCHSTACK_AGENT_ENDPOINT_MODEL", "tiny")
    settings = Settings(environment="test")
    agent = Agent(
        frameworks=["null"],
        endpoint_url=settings.agent_endpoint_url,
        endpoint_model=settings.agent_endpoint_model,
    )
    assert agent.settings["endpoint_url"] == "http://127.0.0.1:8000"
    assert agent.settings["endpoint_model"] == "tiny"
    assert "endpoint_url" not in Agent(frameworks=["null"]).settings


def test_an_endpoint_that_is_not_an_http_url_is_refused() -> None:
    with pytest.raises(ValidationError, match="agent_endpoint_url"):
        Settings(environment="test", agent_endpoint_url="127.0.0.1:8000")
