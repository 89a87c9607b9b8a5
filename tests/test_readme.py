"""The README is a test: its service section, run as a user types it (the lines before it,
the Quick start first, run in an empty virtual environment: tests/test_readme_fresh.py).

Each command runs as a subprocess through bash, exactly as written in README.md, with one
substitution: the values on the service section's ``export`` lines are this test's own
servers (a fresh Postgres database, a flushed Redis database, moto's S3 server), because
the README's are placeholders. The variable names must still be the README's: a README
naming a setting this test does not know fails here. ``BENCHSTACK_DATA_DIR`` points at a
temporary folder so the run never touches ``~/.benchstack``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.processes import pid_alive

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MARKER = "<!-- tests/test_readme.py runs this block"
COMMENT = re.compile(r"\s+#.*$")


def readme_blocks() -> list[list[str]]:
    """The bash blocks the README marks as run by this test, as command lines."""
    text = README.read_text()
    blocks = []
    for part in text.split(MARKER)[1:]:
        body = part.split("```bash\n", 1)[1].split("```", 1)[0]
        lines = [COMMENT.sub("", line).strip() for line in body.splitlines()]
        blocks.append([line for line in lines if line])
    return blocks


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


class Shell:
    """Runs README lines one by one with an environment the export lines change."""

    def __init__(self, env: dict[str, str], substitutes: dict[str, str]) -> None:
        self.env = env
        self.substitutes = substitutes
        self.transcript: list[str] = []

    def export(self, line: str) -> None:
        for assignment in shlex.split(line)[1:]:
            name, _, _ = assignment.partition("=")
            assert name in self.substitutes, (
                f"README exports {name}, which this test does not provide; "
                f"known: {sorted(self.substitutes)}"
            )
            self.env[name] = self.substitutes[name]

    def run(self, line: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        if line.startswith("export "):
            self.export(line)
            return subprocess.CompletedProcess(line, 0, "", "")
        result = subprocess.run(
            ["bash", "-c", line],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        self.transcript.append(f"$ {line}\n{result.stdout}{result.stderr}")
        assert result.returncode == 0, "\n".join(self.transcript[-3:])
        return result


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Fresh Postgres database, Redis database and S3 server for one README run."""
    from moto.server import ThreadedMotoServer

    from tests.support.ephemeral import drop_database, flush_redis, free_port

    if not _port_free(8000):
        pytest.fail("port 8000 is taken; the README's service section uses it as written")
    admin = os.environ.get(
        "BENCHSTACK_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
    )
    database = f"benchstack_readme_{uuid.uuid4().hex[:8]}"
    redis_url = os.environ.get("BENCHSTACK_TEST_REDIS", "redis://127.0.0.1:6379") + "/13"
    s3_port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=s3_port, verbose=False)
    moto.start()
    flush_redis(redis_url)
    try:
        yield {
            "BENCHSTACK_DATABASE_URL": admin.rsplit("/", 1)[0] + f"/{database}",
            "BENCHSTACK_BROKER_URL": redis_url,
            "BENCHSTACK_S3_ENDPOINT": f"127.0.0.1:{s3_port}",
            "BENCHSTACK_S3_ACCESS_KEY": "readme-access",
            "BENCHSTACK_S3_SECRET_KEY": "readme-secret",
            "BENCHSTACK_DATA_DIR": str(tmp_path / "benchstack-data"),
        }
    finally:
        moto.stop()
        flush_redis(redis_url)
        drop_database(admin, database)


def _user_env(data_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSTACK_")}
    env["BENCHSTACK_DATA_DIR"] = data_dir
    # Wide enough that run ids are not cut in the tables a user would read.
    env["COLUMNS"] = "200"
    return env


def _stack_file(data_dir: str, name: str) -> Any:
    return json.loads((Path(data_dir) / "stack" / name).read_text())


def _killed_and_restarted(data_dir: str, service: str) -> dict[str, Any]:
    """SIGKILL ``service`` as the out-of-memory killer would; its entry once `up -d`'s
    supervisor has started it again."""
    (entry,) = [e for e in _stack_file(data_dir, "pids.json") if e["name"] == service]
    os.killpg(entry["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        (now,) = [e for e in _stack_file(data_dir, "pids.json") if e["name"] == service]
        if now["restarts"] == entry["restarts"] + 1:
            return dict(now)
        assert time.monotonic() < deadline, now
        time.sleep(0.2)


def _runs(database_url: str) -> list[dict[str, Any]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT r.id, r.samples_per_second, r.validity, r.report, e.state, "
                    "e.group_id FROM runs r JOIN evaluations e ON e.id = r.evaluation_id "
                    "ORDER BY r.created_at"
                )
            )
            return [dict(row._mapping) for row in rows]
    finally:
        engine.dispose()


@pytest.mark.integration
@pytest.mark.slow
def test_readme_service_section_runs_as_written(servers: dict[str, str]) -> None:
    service, fan_out = readme_blocks()
    shell = Shell(_user_env(servers["BENCHSTACK_DATA_DIR"]), servers)
    try:
        for line in service:
            result = shell.run(line)
            if line.startswith("benchstack submit"):
                submitted = result.stdout
            if line.startswith("benchstack ps"):
                listed = result.stdout
                data_dir = servers["BENCHSTACK_DATA_DIR"]
                supervisor = _stack_file(data_dir, "supervisor.json")["pid"]
                # What the README promises of a worker that dies: started again, and
                # told how it ended; the rest of the block runs on the restarted one.
                restarted = _killed_and_restarted(data_dir, "preprocess")
                assert restarted["last_exit"].startswith("was killed by SIGKILL"), restarted
        assert re.search(r"inference\s+running\s+\d+", listed), listed
        assert "supervisor pid" in listed, listed
        # submit exits non-zero unless the evaluation SUCCEEDED; its figures are printed.
        # The figure as the one rule says it: its interval, BUSY where the host was busy.
        assert re.search(
            r"run \w+: [0-9.]+( \[[0-9.]+, [0-9.]+\])?( BUSY)? samples/s", submitted
        ), submitted
        (run,) = _runs(servers["BENCHSTACK_DATABASE_URL"])
        assert run["state"] == "SUCCEEDED" and run["samples_per_second"] > 0, run
        assert run["id"][:8] in shell.transcript[-2], "results --server lists the run"
        assert "stopped" in shell.transcript[-1]
        assert not pid_alive(supervisor), "down stops the supervisor `up -d` left"

        for line in fan_out:
            shell.run(line)
        fanned = [r for r in _runs(servers["BENCHSTACK_DATABASE_URL"]) if r["group_id"]]
        assert len(fanned) >= 2, shell.transcript[-2]
        for row in fanned:
            assert row["state"] == "SUCCEEDED", row
            host = row["report"]["host"]
            # Two agents on one machine measured one after the other.
            assert host["exclusive"] is True and host["overlapped"] is False, host
            # The measuring child set the allocator the settings ask for, and counted the
            # pages the kernel mapped while LoadGen ran.
            assert host["allocator"]["choice"] == "keep", host
            assert host["allocator"]["applied"].startswith("freed memory kept"), host
            assert row["report"]["timings"]["loadgen_minor_faults"] >= 0, row["report"]
        threads = sorted(
            r["report"]["settings"]["backend_options"]["intra_op_threads"] for r in fanned
        )
        assert threads == [1, 2], threads
    finally:
        subprocess.run(
            ["bash", "-c", "benchstack down"], env=shell.env, capture_output=True, timeout=120
        )
