"""Fixtures for the browser tests: the throw-away stack of tests/integration and Chromium
from Debian driven by Playwright. Skips (with the reason) where either is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import (  # noqa: F401  (fixtures and hook, re-used by name)
    client_for,
    fleet,
    make_token,
    pytest_runtest_makereport,
    running_stack,
    torch_client,
    torch_stack,
)
from tests.support.ephemeral import EphemeralStack

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.fixture(scope="session")
def stack() -> Iterator[EphemeralStack]:
    """tests/integration's stack (same steps), on a Redis database of its own: when
    tests/integration runs in the same session, its stack stays alive beside this one."""
    yield from running_stack(EphemeralStack())


def chromium_path() -> str | None:
    candidates = [os.environ.get("BENCHSTACK_CHROMIUM", ""), "/usr/bin/chromium"]
    found = [c for c in candidates if c and os.access(c, os.X_OK)]
    return found[0] if found else shutil.which("chromium")


# Module scope: Playwright's sync API keeps an event loop running on the main thread
# until it stops, and later tests that call asyncio.run() would fail beside it.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium: `playwright install` cannot download browsers here."""
    path = chromium_path()
    if path is None:
        reason = "Chromium not found at /usr/bin/chromium (apt-get install -y chromium)"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=path, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


def watched_page(
    browser: Any, base_url: str, *, height: int = 900, timeout_ms: int = 20_000
) -> Iterator[Any]:
    """A page on ``base_url``; a CSP violation or a script error (console errors
    included) fails the test that used it."""
    context = browser.new_context(viewport={"width": 1280, "height": height}, base_url=base_url)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    yield page
    context.close()
    assert not problems, problems


@pytest.fixture
def page(browser: Any, stack: EphemeralStack) -> Iterator[Any]:
    """A page on the stack's API (``watched_page``)."""
    yield from watched_page(browser, stack.api_url)
