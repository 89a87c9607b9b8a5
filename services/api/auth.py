"""API tokens: created once, shown once, stored as a SHA-256 digest; each one expires.

A token carries 256 random bits, so a plain digest (no salt, no slow hash) is enough: nobody
can guess one, and a leaked database row does not reveal it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.db.accounts import ApiToken, User
from shared.db.clock import as_utc, utcnow

TOKEN_PREFIX = "bst_"
# What a listing shows of a token: the scheme prefix and six random characters.
SHOWN_PREFIX_CHARS = len(TOKEN_PREFIX) + 6
DEFAULT_LIFETIME = timedelta(days=90)
# Writing last_used_at on every request would turn each read into a write.
_LAST_USED_RESOLUTION = timedelta(minutes=1)
_LIFETIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}
_UNIT["w"] = timedelta(weeks=1)
# Shorter than this, a token would expire before anyone could use it.
_SHORTEST = timedelta(minutes=1)


class TokenRejected(Exception):
    """Why a presented token does not authenticate; the message is safe to show the caller."""


@dataclass(frozen=True)
class TokenInfo:
    """A token as a listing shows it: never the secret, never its digest."""

    id: int
    user: str
    prefix: str
    label: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime
    revoked_at: datetime | None

    def status(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= now else "active"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_lifetime(text: str, *, longest: timedelta) -> timedelta:
    """``30d``, ``12h``, ``2w`` or ``90m`` as a timedelta, at most ``longest``."""
    match = _LIFETIME.match(text)
    accepted = f"a number and a unit m, h, d or w (e.g. 30d), from 1m to {_days(longest)}"
    if match is None:
        raise ValueError(f"expires-in: {text!r} is not a lifetime; accepted: {accepted}")
    lifetime = float(match.group(1)) * _UNIT[match.group(2)]
    if lifetime < _SHORTEST or lifetime > longest:
        raise ValueError(
            f"expires-in: {text!r} is outside the accepted range; accepted: {accepted} "
            "(the longest is BENCHSTACK_MAX_TOKEN_LIFETIME_DAYS)"
        )
    return lifetime


def _days(span: timedelta) -> str:
    return f"{span / timedelta(days=1):g}d"


def get_or_create_user(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        user = User(name=name)
        session.add(user)
        session.flush()
    return user


def create_token(
    session: Session,
    *,
    user_name: str,
    label: str = "",
    expires_in: timedelta = DEFAULT_LIFETIME,
) -> str:
    """A new token for the user (created if missing); the clear token is returned only here."""
    if expires_in <= timedelta(0):
        raise ValueError(f"expires_in: must be positive (got {expires_in})")
    user = get_or_create_user(session, user_name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(
        ApiToken(
            user_id=user.id,
            token_hash=hash_token(token),
            prefix=token[:SHOWN_PREFIX_CHARS],
            label=label,
            expires_at=utcnow() + expires_in,
        )
    )
    session.flush()
    return token


def _info(row: ApiToken) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        user=row.user.name,
        prefix=row.prefix,
        label=row.label,
        created_at=as_utc(row.created_at),
        last_used_at=as_utc(row.last_used_at) if row.last_used_at else None,
        expires_at=as_utc(row.expires_at),
        revoked_at=as_utc(row.revoked_at) if row.revoked_at else None,
    )


def list_tokens(session: Session, *, user_name: str | None = None) -> list[TokenInfo]:
    """Every token (of one user, when named), oldest first."""
    query = select(ApiToken).join(User).order_by(ApiToken.created_at, ApiToken.id)
    if user_name is not None:
        query = query.where(User.name == user_name)
    return [_info(row) for row in session.scalars(query)]


def revoke_token(session: Session, reference: str) -> tuple[TokenInfo, bool]:
    """Revoke the token a reference names: its id, its listed prefix, or the whole token.

    Returns the token and whether this call revoked it (False: it was revoked already).
    A prefix matching several tokens revokes none: the caller must say which.
    """
    reference = reference.strip()
    if reference.isdigit():
        rows = list(session.scalars(select(ApiToken).where(ApiToken.id == int(reference))))
    elif len(reference) > SHOWN_PREFIX_CHARS:
        rows = list(
            session.scalars(select(ApiToken).where(ApiToken.token_hash == hash_token(reference)))
        )
    elif reference.startswith(TOKEN_PREFIX) and len(reference) > len(TOKEN_PREFIX):
        query = select(ApiToken).where(ApiToken.prefix.startswith(reference, autoescape=True))
        rows = list(session.scalars(query))
    else:
        raise LookupError(
            f"token: {reference!r} names no token; accepted: a token id or a prefix such as "
            f"{TOKEN_PREFIX}AbC123 (see `benchstack token list`)"
        )
    if not rows:
        raise LookupError(f"token: no token matches {reference!r} (see `benchstack token list`)")
    if len(rows) > 1:
        ids = ", ".join(str(row.id) for row in rows)
        raise LookupError(f"token: {reference!r} matches tokens {ids}; revoke one by its id")
    row = rows[0]
    if row.revoked_at is not None:
        return _info(row), False
    row.revoked_at = utcnow()
    session.flush()
    return _info(row), True


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def authenticate(session: Session, token: str | None) -> User:
    """The user a token belongs to; TokenRejected says why it does not authenticate."""
    if not token:
        raise TokenRejected("a Bearer token is required (benchstack token create)")
    row = None
    if token.startswith(TOKEN_PREFIX):
        row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
    if row is None:
        raise TokenRejected("the Bearer token is not valid (benchstack token create)")
    now = utcnow()
    if row.revoked_at is not None:
        raise TokenRejected(
            f"token {row.prefix}… was revoked at {_when(row.revoked_at)}; "
            "create a new one with `benchstack token create`"
        )
    if as_utc(row.expires_at) <= now:
        raise TokenRejected(
            f"token {row.prefix}… expired at {_when(row.expires_at)}; "
            "create a new one with `benchstack token create`"
        )
    if row.last_used_at is None or now - as_utc(row.last_used_at) > _LAST_USED_RESOLUTION:
        row.last_used_at = now
    return row.user


def _when(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y-%m-%d %H:%M UTC")
