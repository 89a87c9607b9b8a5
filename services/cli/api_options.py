"""The options by which a command reaches the benchstack API, said once for every command
that takes them."""

from __future__ import annotations

import typer

# A command that always talks to the API; without the option, the settings' api_url.
API_SERVER = typer.Option(None, help="API URL; default BENCHSTACK_API_URL.")
# A command that reads the local database unless it is given an API (or the environment
# names one, as for the commands above).
API_INSTEAD_OF_DATABASE = typer.Option(
    None,
    envvar="BENCHSTACK_API_URL",
    help="Read from a benchstack API instead of the local database (default: "
    "BENCHSTACK_API_URL where it is set).",
)
# Neither given: the token `benchstack token create` saved (remote.resolve_token).
API_TOKEN = typer.Option(
    None, envvar="BENCHSTACK_TOKEN", help="API token; default: the one `token create` saved."
)
