"""Steps the browser tests share."""

from __future__ import annotations

from typing import Any


def sign_in(page: Any, token: str) -> None:
    """Open the UI and save ``token`` as a user does: pasted in the header's field."""
    page.goto("/")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Save token").click()
