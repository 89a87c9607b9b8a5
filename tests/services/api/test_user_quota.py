"""Per-user limits at submission (services/api/user_quota.py), through the GraphQL API
over SQLite: a refusal names the limit, the user's figure and the setting, and stores
nothing; a campaign is counted whole; an operator's override lifts a user's limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select

from shared.db.accounts import User
from shared.db.evaluations import Evaluation
from shared.db.session import session_scope
from shared.settings import Settings
from tests.services.api.conftest import Api, api_with

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
SUBMIT = """mutation($input: SubmitEvaluationInput!) { submitEvaluation(input: $input) {
  __typename ... on Evaluation { id } ... on UserError { message field }
  ... on LimitExceeded { accepted } } }"""
REPEATS = """mutation($input: SubmitRepeatsInput!) { submitRepeats(input: $input) {
  __typename ... on Repeats { groupId } ... on UserError { message field } } }"""


def stored(api: Api, user: str) -> int:
    with session_scope(api.settings.effective_database_url) as session:
        query = select(func.count()).select_from(Evaluation).join(User)
        return int(session.scalar(query.where(User.name == user)) or 0)


def submit(api: Api, token: str, given: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = api.data(token, SUBMIT, {"input": given or QUICK})["submitEvaluation"]
    return answer


def test_queued_limit_refuses_with_the_figures_and_stores_nothing(tmp_path: Path) -> None:
    with api_with(tmp_path, user_max_queued=2) as api:
        api.add_agent()
        alice, bob = api.token("alice"), api.token("bob")
        assert [submit(api, alice)["__typename"] for _ in range(2)] == ["Evaluation"] * 2
        refused = submit(api, alice)
        assert refused["__typename"] == "LimitExceeded", refused
        assert refused["field"] == "user_max_queued"
        message = refused["message"]
        assert "alice has 2 evaluation(s) QUEUED" in message, message
        assert "the limit is 2" in message and "BENCHSTACK_USER_MAX_QUEUED" in message
        assert refused["accepted"] == ["at most 0 more now"]
        assert stored(api, "alice") == 2
        # Another user's share is their own.
        assert submit(api, bob)["__typename"] == "Evaluation"


def test_agent_seconds_count_each_run_at_its_longest(tmp_path: Path) -> None:
    # MAX_RUN_SECONDS 3600: a run with no max_duration_s holds up to 3600 s; one with
    # maxDurationS 10 at most 10 s plus the 60 s setup allowance.
    with api_with(tmp_path, user_max_agent_seconds=3700) as api:
        api.add_agent()
        alice = api.token("alice")
        assert submit(api, alice)["__typename"] == "Evaluation"
        bounded = {**QUICK, "settings": {"minDurationS": 0.3, "maxDurationS": 10}}
        assert submit(api, alice, bounded)["__typename"] == "Evaluation"
        refused = submit(api, alice, bounded)
        assert refused["__typename"] == "LimitExceeded", refused
        assert refused["field"] == "user_max_agent_seconds"
        assert "hold agents for 3670 s" in refused["message"], refused["message"]
        assert "adds 70 s" in refused["message"]
        assert "BENCHSTACK_USER_MAX_AGENT_SECONDS" in refused["message"]
        assert stored(api, "alice") == 2


def test_a_campaign_is_counted_whole_before_any_member_is_stored(tmp_path: Path) -> None:
    with api_with(tmp_path, user_max_queued=5) as api:
        api.add_agent()
        alice = api.token("alice")
        answer = api.data(alice, REPEATS, {"input": {"evaluation": QUICK, "count": 6}})
        refused = answer["submitRepeats"]
        assert refused["__typename"] == "LimitExceeded", refused
        assert "adds 6" in refused["message"], refused["message"]
        assert stored(api, "alice") == 0
        answer = api.data(alice, REPEATS, {"input": {"evaluation": QUICK, "count": 5}})
        assert answer["submitRepeats"]["__typename"] == "Repeats", answer
        assert stored(api, "alice") == 5


def test_an_override_lifts_one_users_limit(tmp_path: Path) -> None:
    overrides = {"ci": {"user_max_queued": 0}}
    with api_with(tmp_path, user_max_queued=1, user_limit_overrides=overrides) as api:
        api.add_agent()
        ci, alice = api.token("ci"), api.token("alice")
        assert [submit(api, ci)["__typename"] for _ in range(3)] == ["Evaluation"] * 3
        assert submit(api, alice)["__typename"] == "Evaluation"
        assert submit(api, alice)["__typename"] == "LimitExceeded"


def test_an_unknown_override_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"user_limit_overrides\['ci'\].*user_max_qeued"):
        Settings(data_dir=tmp_path, user_limit_overrides={"ci": {"user_max_qeued": 5}})
