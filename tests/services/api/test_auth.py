"""Tokens in the database: lifetimes, listings that never hold a secret, revocation by
id, prefix or whole token, and the reasons authentication gives."""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta

import pytest
from sqlalchemy import update

from services.api.auth import (
    TokenRejected,
    authenticate,
    create_token,
    hash_token,
    list_tokens,
    parse_lifetime,
    revoke_token,
)
from shared.db.accounts import ApiToken
from shared.db.clock import utcnow
from shared.db.session import session_scope

YEAR = timedelta(days=365)


@pytest.fixture
def url(tmp_path: object) -> str:
    return f"sqlite:///{tmp_path}/auth.db"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("2w", timedelta(weeks=2)),
        ("90m", timedelta(minutes=90)),
        (" 1.5d ", timedelta(days=1.5)),
        ("365d", YEAR),
    ],
)
def test_lifetimes_are_read(text: str, expected: timedelta) -> None:
    assert parse_lifetime(text, longest=YEAR) == expected


@pytest.mark.parametrize("text", ["366d", "0d", "30s", "30", "d", "-1d", "forever"])
def test_bad_or_too_long_lifetimes_are_refused_naming_the_field(text: str) -> None:
    with pytest.raises(ValueError, match="expires-in:.*accepted: .*to 365d"):
        parse_lifetime(text, longest=YEAR)


def test_a_token_expires_after_its_lifetime(url: str) -> None:
    with session_scope(url) as session:
        token = create_token(session, user_name="alice", expires_in=timedelta(hours=1))
        assert authenticate(session, token).name == "alice"
        (info,) = list_tokens(session, user_name="alice")
        assert timedelta(minutes=59) < info.expires_at - info.created_at <= timedelta(hours=1)
        session.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)))
        with pytest.raises(TokenRejected, match="expired at"):
            authenticate(session, token)


def test_authentication_records_last_use(url: str) -> None:
    with session_scope(url) as session:
        token = create_token(session, user_name="alice")
        assert list_tokens(session)[0].last_used_at is None
        authenticate(session, token)
        used = list_tokens(session)[0].last_used_at
        assert used is not None and utcnow() - used < timedelta(minutes=1)


def test_a_listing_never_holds_the_secret(url: str) -> None:
    with session_scope(url) as session:
        token = create_token(session, user_name="alice", label="laptop")
        create_token(session, user_name="bob")
        (info,) = list_tokens(session, user_name="alice")
        assert (info.user, info.label, info.status(utcnow())) == ("alice", "laptop", "active")
        assert token.startswith(info.prefix) and len(info.prefix) == 10
        shown = repr(asdict(info))
        assert token not in shown and hash_token(token) not in shown
        assert [t.user for t in list_tokens(session)] == ["alice", "bob"]
        assert list_tokens(session, user_name="carol") == []


@pytest.mark.parametrize("how", ["id", "prefix", "whole"])
def test_revoke_by_id_prefix_or_whole_token(url: str, how: str) -> None:
    with session_scope(url) as session:
        token = create_token(session, user_name="alice")
        keep = create_token(session, user_name="alice")
        (info, _) = list_tokens(session)
        reference = {"id": str(info.id), "prefix": info.prefix, "whole": token}[how]
        revoked, now = revoke_token(session, reference)
        assert (revoked.id, now, revoked.status(utcnow())) == (info.id, True, "revoked")
        with pytest.raises(TokenRejected, match="revoked at"):
            authenticate(session, token)
        assert authenticate(session, keep).name == "alice"
        # A second revocation changes nothing and says so.
        again, now = revoke_token(session, reference)
        assert (again.revoked_at, now) == (revoked.revoked_at, False)


def test_an_ambiguous_prefix_revokes_nothing(url: str) -> None:
    with session_scope(url) as session:
        create_token(session, user_name="alice")
        create_token(session, user_name="bob")
        # The scheme alone would match every token: it names none.
        with pytest.raises(LookupError, match="names no token"):
            revoke_token(session, "bst_")
    with session_scope(url) as session:
        session.execute(update(ApiToken).values(prefix="bst_same12"))
    with session_scope(url) as session:
        with pytest.raises(LookupError, match="matches tokens 1, 2; revoke one by its id"):
            revoke_token(session, "bst_same")
        assert all(t.revoked_at is None for t in list_tokens(session))


@pytest.mark.parametrize("reference", ["999", "bst_zzzzzz", "nonsense"])
def test_revoking_what_does_not_exist_says_so(url: str, reference: str) -> None:
    with session_scope(url) as session:
        create_token(session, user_name="alice")
        with pytest.raises(LookupError, match="token: "):
            revoke_token(session, reference)
