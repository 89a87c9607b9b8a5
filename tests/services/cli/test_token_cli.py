"""`benchstack token create | list | revoke` as a user runs them, against a real SQLite file."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.cli import benchstack


def listing(data_dir: Path, *args: str) -> list[dict[str, Any]]:
    result = benchstack(data_dir, "token", "list", "--json", *args)
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_create_list_revoke(tmp_path: Path) -> None:
    created = benchstack(
        tmp_path, "token", "create", "--user", "alice", "--label", "ci", "--expires-in", "30d"
    )
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert "expires in 30 days" in created.stderr
    assert benchstack(tmp_path, "token", "create", "--user", "bob", "--no-save").returncode == 0

    (row,) = listing(tmp_path, "--user", "alice")
    assert (row["user"], row["label"], row["status"]) == ("alice", "ci", "active")
    lifetime = datetime.fromisoformat(row["expires_at"]) - datetime.fromisoformat(row["created_at"])
    assert abs(lifetime - timedelta(days=30)) < timedelta(seconds=5)
    assert token.startswith(row["prefix"]) and token not in json.dumps(row)
    assert {r["user"] for r in listing(tmp_path)} == {"alice", "bob"}
    table = benchstack(tmp_path, "token", "list")
    assert row["prefix"] in table.stdout and token not in table.stdout

    revoked = benchstack(tmp_path, "token", "revoke", row["prefix"])
    assert revoked.returncode == 0, revoked.stderr
    assert f"revoked token {row['id']}" in revoked.stdout
    (after,) = listing(tmp_path, "--user", "alice")
    assert after["status"] == "revoked" and after["revoked_at"]
    assert [r["status"] for r in listing(tmp_path, "--user", "bob")] == ["active"]
    again = benchstack(tmp_path, "token", "revoke", str(row["id"]))
    assert again.returncode == 0 and "revoked already" in again.stdout


def test_bad_requests_exit_1_with_the_field_named(tmp_path: Path) -> None:
    too_long = benchstack(tmp_path, "token", "create", "--no-save", "--expires-in", "400d")
    assert too_long.returncode == 1
    assert "expires-in: '400d'" in too_long.stderr and "365d" in too_long.stderr
    assert listing(tmp_path) == []  # nothing was created
    unknown = benchstack(tmp_path, "token", "revoke", "bst_nothere")
    assert unknown.returncode == 1 and "no token matches" in unknown.stderr
