"""shared/storage.py's get_if_stored: an absent object reads as None, a stored one as its bytes."""

from __future__ import annotations

from pathlib import Path

from shared.storage import LocalStore, get_if_stored


def test_get_if_stored_reads_what_is_stored_and_none_for_what_is_not(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "objects")
    store.put_bytes("runs/r1/trace.json", b"{}")
    assert get_if_stored(store, "runs/r1/trace.json") == b"{}"
    assert get_if_stored(store, "runs/r1/missing.json") is None
    assert get_if_stored(store, None) is None
