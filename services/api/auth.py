"""API tokens: created once, shown once, stored as a SHA-256 digest.

A token carries 256 random bits, so a plain digest (no salt, no slow hash) is enough: nobody
can guess one, and a leaked database row does not reveal it.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.db.accounts import ApiToken, User
from shared.db.clock import as_utc, utcnow

TOKEN_PREFIX = "bst_"
# Writing last_used_at on every request would turn each read into a write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def get_or_create_user(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        user = User(name=name)
        session.add(user)
        session.flush()
    return user


def create_token(session: Session, *, user_name: str, label: str = "") -> str:
    """A new token for the user (created if missing); the clear token is returned only here."""
    user = get_or_create_user(session, user_name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(
            user_id=user.id,
            token_hash=hash_token(token),
            prefix=token[: len(TOKEN_PREFIX) + 6],
            label=label,
        )
    )
    session.flush()
    return token


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def authenticate(session: Session, token: str | None) -> User | None:
    if not token or not token.startswith(TOKEN_PREFIX):
        return None
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
    if row is None or row.revoked_at is not None:
        return None
    now = utcnow()
    if row.last_used_at is None or now - as_utc(row.last_used_at) > _LAST_USED_RESOLUTION:
        row.last_used_at = now
    return row.user
