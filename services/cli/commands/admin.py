"""Administering a deployment through its database: `benchstack token ...` and `db upgrade`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import typer
from rich.console import Console
from rich.markup import escape

from services.cli.errors import user_errors
from services.cli.tables import Column, fitted_table
from shared.settings import get_settings

console = Console(highlight=False)

token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)


def token_create(
    user: str = typer.Option("admin", help="The user the token belongs to (created if new)."),
    label: str = typer.Option("", help="A note to tell tokens apart."),
    expires_in: str | None = typer.Option(
        None,
        help="Lifetime, e.g. 30d, 12h, 2w (default: BENCHSTACK_TOKEN_LIFETIME_DAYS, 90d; "
        "at most BENCHSTACK_MAX_TOKEN_LIFETIME_DAYS, 365d).",
    ),
    save: bool = typer.Option(True, help="Also save it for `benchstack submit` (data_dir/token)."),
) -> None:
    """Create an API token (talks to the database directly); it is shown once."""
    from services.api.auth import create_token, parse_lifetime
    from services.cli.remote import save_token
    from shared.db.session import session_scope

    settings = get_settings()
    longest = timedelta(days=settings.max_token_lifetime_days)
    with user_errors():
        lifetime = (
            parse_lifetime(expires_in, longest=longest)
            if expires_in is not None
            else timedelta(days=settings.token_lifetime_days)
        )
    with session_scope(settings.effective_database_url) as session:
        token = create_token(session, user_name=user, label=label, expires_in=lifetime)
    typer.echo(token)
    typer.echo(f"expires in {_span(lifetime)}", err=True)
    if save:
        path = save_token(token)
        typer.echo(f"saved to {path}", err=True)


def _span(lifetime: timedelta) -> str:
    days = lifetime.total_seconds() / 86400
    return f"{days:g} days" if days >= 1 else f"{lifetime.total_seconds() / 3600:g} hours"


def _moment(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "-"


# What `token revoke` takes (id, prefix) is never cut; the label goes first.
TOKEN_COLUMNS = (
    Column("id", priority=100, wrap=False),
    Column("user", priority=70, min_width=8),
    Column("prefix", priority=95, wrap=False),
    Column("label", priority=30),
    Column("created", priority=20, min_width=10),
    Column("last used", priority=40, min_width=10),
    Column("expires", priority=50, min_width=10),
    Column("status", priority=90, min_width=7),
)


def token_list(
    user: str | None = typer.Option(None, help="Only this user's tokens (default: everyone's)."),
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON on stdout."),
) -> None:
    """List tokens: id, prefix, label, dates and status; never the secret."""
    from services.api.auth import list_tokens
    from shared.db.clock import utcnow
    from shared.db.session import session_scope

    with session_scope(get_settings().effective_database_url) as session:
        tokens = list_tokens(session, user_name=user)
    now = utcnow()
    if as_json:
        rows = [
            {
                "id": t.id,
                "user": t.user,
                "prefix": t.prefix,
                "label": t.label,
                "created_at": t.created_at.isoformat(),
                "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
                "expires_at": t.expires_at.isoformat(),
                "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
                "status": t.status(now),
            }
            for t in tokens
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    if not tokens:
        console.print("no tokens" + (f" for user {escape(user)}" if user else ""))
        return
    cells = [
        [
            str(t.id),
            escape(t.user),
            t.prefix,
            escape(t.label),
            _moment(t.created_at),
            _moment(t.last_used_at),
            _moment(t.expires_at),
            t.status(now) + (f" {_moment(t.revoked_at)}" if t.revoked_at else ""),
        ]
        for t in tokens
    ]
    console.print(fitted_table(TOKEN_COLUMNS, cells, width=console.width))


def token_revoke(
    reference: str = typer.Argument(
        ..., metavar="PREFIX_OR_ID", help="A token's id or prefix (see `token list`)."
    ),
) -> None:
    """Revoke a token: requests carrying it get 401 (within API_TOKEN_CACHE_SECONDS, 5 s)."""
    from services.api.auth import revoke_token
    from shared.db.session import session_scope

    with user_errors(), session_scope(get_settings().effective_database_url) as session:
        token, revoked_now = revoke_token(session, reference)
    what = f"token {token.id} ({token.prefix}…, user {escape(token.user)})"
    if revoked_now:
        console.print(f"revoked {what}")
    else:
        console.print(f"{what} was revoked already at {_moment(token.revoked_at)}")


def db_upgrade() -> None:
    """Create the configured database if the server lacks it, then migrate it to the
    newest schema."""
    from shared.db.migrations import create_database_if_missing, upgrade_head

    settings = get_settings()
    url = settings.effective_database_url
    if create_database_if_missing(url):
        console.print(f"created database {url.split('@')[-1]}")
    upgrade_head(url)
    console.print(
        f"database at the newest schema: {settings.effective_database_url.split('@')[-1]}"
    )


def register(app: typer.Typer) -> None:
    token_app.command("create")(token_create)
    token_app.command("list")(token_list)
    token_app.command("revoke")(token_revoke)
    db_app.command("upgrade")(db_upgrade)
    app.add_typer(token_app, name="token")
    app.add_typer(db_app, name="db")
