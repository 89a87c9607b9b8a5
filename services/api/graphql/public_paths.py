"""The one filter between stored rows and what GraphQL serves: no path of the server.

Every string a Run or Evaluation field serves from a stored row (the report, settings,
environment, dataset, a failure's reason) passes through ``public``: a path under one of
the serving API's folders (datasets, models, objects, data: shared/server_paths.py) is
named relative to it, and any other absolute path that is left (a run stored by another
machine, a row written before runs were stored without them) by its last name. New stack
runs are stored without them already (services/aggregator/public.py); this keeps old rows
and reasons from showing them too.

``create_app`` sets the folders from its settings (``serve_from``): one API process serves
one deployment, and the types are built from rows in many places without the app at hand.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from shared.server_paths import server_roots, without_roots
from shared.settings import Settings

_roots: tuple[str, ...] = ()


def serve_from(settings: Settings) -> None:
    """The folders of the deployment this process serves (``create_app`` calls it)."""
    global _roots
    _roots = server_roots(settings)


def public(value: Any) -> Any:
    """``value`` (JSON) as a client may read it."""
    return _last_names(without_roots(value, _roots))


def _last_names(value: Any) -> Any:
    if isinstance(value, str):
        # A bare absolute path (no words around it) of a folder not known here.
        if value.startswith("/") and not any(c.isspace() for c in value):
            return PurePosixPath(value).name or "."
        return value
    if isinstance(value, dict):
        return {k: _last_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_last_names(v) for v in value]
    return value
