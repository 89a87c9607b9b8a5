"""The API in-process over SQLite, served over HTTP on a free local port: for the CLI's
``--server`` paths, which speak HTTP (tests/services/api/conftest.api_with is the app)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from services.api.app import create_app
from tests.services.api.conftest import Api, api_with


@contextmanager
def served_api(tmp_path: Path) -> Iterator[tuple[Api, str]]:
    """(the API's test handle, its URL)."""
    with api_with(tmp_path) as api:
        web = create_app(api.settings, publish=api.publisher)
        server = uvicorn.Server(uvicorn.Config(web, host="127.0.0.1", port=0, log_level="warning"))
        thread = threading.Thread(target=server.run, name="served-api", daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the API did not start"
            time.sleep(0.05)
        try:
            yield api, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(timeout=10)
