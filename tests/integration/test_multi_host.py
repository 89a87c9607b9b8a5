"""The stack over several hosts on one machine (tests/support/netns_stack.py): servers,
API with scheduler, preprocess and two inference agents each in a network namespace of
its own, with its own hostname, HOME, data, host-slot folder and /tmp.

The README's service flow and a fan-out run through the API's address from a client
host; each agent's report must name its own host, environment and machine, each host's
load is recorded in its own slot folder, and nothing reaches an address outside the
namespaces. Beside them (one test, to keep the module short), a two-rank training gang
meets across the agent hosts. Skips, saying why, where namespaces cannot be made (not
root, no `ip`).
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.support.netns_stack import NetnsStack, unavailable_reason

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Short and cheap: the null backend sleeps 2 ms per batch; Offline sizes its one query
# for 1 s at 400 samples/s.
QUICK = [
    "resnet18", "--framework", "null", "--scenario", "offline", "--samples", "16",
    "--min-duration", "1", "--settings", '{"target_qps": 400}', "-o", "service_time_ms=2",
]  # fmt: skip
REPORTS = """
query($id: String!) {
  compare(groupId: $id) { done rows { evaluationId state reason agentId hostname } }
}
"""
RUNS = "query($id: String!) { evaluation(id: $id) { state runs { id report } } }"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def _skip_reason() -> str:
    reason = unavailable_reason()
    return f"network namespaces cannot be made here: {reason}" if reason else ""


@pytest.fixture(scope="module")
def hosts() -> Iterator[NetnsStack]:
    reason = _skip_reason()
    if reason:
        print(reason)
        pytest.skip(reason)
    stack = NetnsStack(agents=2)
    try:
        stack.create()
        stack.start_servers()
        # The services start while the token is made; wait_agents waits for the API too.
        stack.start_services(wait=False)
        yield stack
    finally:
        stack.close()


@pytest.fixture(scope="module")
def token(hosts: NetnsStack) -> str:
    # As the README: `benchstack token create` on a host that reaches the database.
    created = hosts.cli("api", "token", "create", "--user", "alice")
    return created.stdout.strip()


def _runs_of(hosts: NetnsStack, token: str, evaluation_id: str) -> list[dict[str, Any]]:
    evaluation = hosts.graphql(token, RUNS, {"id": evaluation_id})["evaluation"]
    assert evaluation["state"] == "SUCCEEDED", evaluation
    runs: list[dict[str, Any]] = evaluation["runs"]
    return runs


def _slot_history(folder: Path) -> set[str]:
    history = folder / "history.jsonl"
    if not history.exists():
        return set()
    return {json.loads(line)["run"] for line in history.read_text().splitlines() if line}


def _peers(namespace: str) -> list[str]:
    """The far end of every established TCP connection in a namespace."""
    out = subprocess.run(
        ["ip", "netns", "exec", namespace, "ss", "-tnH", "state", "established"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split()[-1].rsplit(":", 1)[0].strip("[]") for line in out.splitlines() if line]


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # ended meanwhile
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def test_readme_flow_and_a_fan_out_run_across_hosts(hosts: NetnsStack, token: str) -> None:
    try:
        _readme_flow_and_fan_out(hosts, token)
    except BaseException:
        print(hosts.logs())  # every host's service logs, in the failure's captured output
        raise


def _readme_flow_and_fan_out(hosts: NetnsStack, token: str) -> None:
    subnet = ipaddress.ip_network(f"{hosts.subnet}.0/24")
    agents = hosts.wait_agents(token)
    by_host = {h.hostname: h for h in hosts.agent_hosts}
    assert sorted(a["hostname"] for a in agents) == sorted(by_host), agents

    # A two-rank training gang across the agent hosts, started first and checked last
    # (it imports torch meanwhile; outside the host slot, so the histories below hold
    # only the inference runs).
    gang = _start_gang(hosts) if find_spec("torch") else []
    if not gang:
        print("torch is not installed: no training gang across the hosts")

    # The README's flow, from the client host, to the API's address; beside it, a fan-out
    # over both agents, each on its own host (both CLI calls follow their work to the end).
    python = [sys.executable, "-m", "services.cli.main", "submit", *QUICK, "--token", token]
    readme = hosts.popen("client", python)
    fan_out = hosts.popen("client", [*python, "--fan-out", "--seed", "1"])
    submitted, errors = readme.communicate(timeout=300)
    assert readme.returncode == 0, submitted + errors
    # The figure as the one rule says it: its interval, BUSY where the host was busy.
    assert re.search(r"run \w+: [0-9.]+( \[[0-9.]+, [0-9.]+\])?( BUSY)? samples/s", submitted), (
        submitted
    )
    fanned, errors = fan_out.communicate(timeout=300)
    assert fan_out.returncode == 0, fanned + errors
    group = re.search(r"fan-out (\S+) submitted", fanned)
    assert group, fanned
    listed = hosts.cli("client", "results", "--server", hosts.api_url, "--token", token)
    assert "resnet18" in listed.stdout, listed.stdout
    rows = hosts.graphql(token, REPORTS, {"id": group[1]})["compare"]["rows"]
    assert [r["state"] for r in rows] == ["SUCCEEDED", "SUCCEEDED"], rows
    assert sorted(r["hostname"] for r in rows) == sorted(by_host), rows

    ran_on: dict[str, set[str]] = {name: set() for name in by_host}
    for row in rows:
        host = by_host[row["hostname"]]
        (run,) = _runs_of(hosts, token, row["evaluationId"])
        report = run["report"]
        # Each report names its own host, as the agent's own process saw it...
        assert report["environment"]["hostname"] == host.hostname, report["environment"]
        assert report["agent_id"].startswith(f"{host.hostname}/"), report["agent_id"]
        assert report["agent"]["settings"]["machine"] == f"netns/{host.role}", report["agent"]
        # ...and its own environment (each agent host sets its own OMP_NUM_THREADS).
        own = hosts.env_for(host)["OMP_NUM_THREADS"]
        assert report["environment"]["env"]["OMP_NUM_THREADS"] == own, report["environment"]
        # The host slot is per host: no run overlapped another in its slot, though the
        # agents measured on one machine, maybe at once.
        assert report["host"]["exclusive"] is True, report["host"]
        assert report["host"]["overlapped"] is False, report["host"]
        ran_on[host.hostname].add(run["id"])
    # The README's single run went to one of the agents: count it where it ran.
    (single_id,) = re.findall(r"evaluation (\S+) submitted", submitted)
    (single,) = _runs_of(hosts, token, single_id)
    ran_on[single["report"]["environment"]["hostname"]].add(single["id"])

    # Host load is recorded per host: each agent's slot folder holds its runs only, and no
    # other host measured anything.
    for name, host in by_host.items():
        assert _slot_history(host.slot_dir) == ran_on[name], (name, ran_on)
    for role in ("db", "api", "prep", "client"):
        assert _slot_history(hosts.hosts[role].slot_dir) == set(), role

    # Nothing outside the namespaces: every service's settings name namespace addresses
    # only, every connection is within the subnet, and the machine's own loopback (where
    # the shared Postgres listens) is not even reachable from a host.
    for role, host in hosts.hosts.items():
        pids = hosts.namespace_pids(role)
        for pid in pids:
            env = _environ(pid)
            for name, value in env.items():
                if name.startswith("BENCHSTACK_"):
                    assert not any(n in value for n in LOOPBACK_NAMES), (role, name, value)
            if env:
                assert env.get("HOME") == str(host.home), (role, pid, env.get("HOME"))
        for peer in _peers(host.namespace):
            address = ipaddress.ip_address(peer)
            # A dual-stack socket names an IPv4 peer as ::ffff:a.b.c.d.
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
                address = address.ipv4_mapped
            assert address in subnet, (role, peer)
    probe = "(exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null"
    assert hosts.run("client", ["bash", "-c", probe], check=False).returncode != 0
    if gang:
        _check_gang(hosts, gang)


def test_close_removes_namespaces_and_folders_after_a_partial_start() -> None:
    reason = _skip_reason()
    if reason:
        print(reason)
        pytest.skip(reason)
    stack = NetnsStack(agents=1)
    try:
        stack.create()  # the network only: close() must undo a start that went no further
        made = set(stack.created)
    finally:
        stack.close()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = {line.split()[0] for line in listed.splitlines() if line.strip()} & made
    assert not left, left
    assert not Path(stack.root).exists()


# One rank of a two-rank gang (services/workloads/training/gang.py), as an agent's
# measurement child runs it: rendezvous through the object store, gloo between hosts.
RANK = """
import json, os, sys
from services.workloads.training.gang import train_in_gang
from services.workloads.training.throughput import TrainingSettings
from shared.settings import get_settings
from shared.storage import make_store

settings = get_settings()
training = TrainingSettings(model="digits", steps=2, batch_size=4, warmup=1, image_size=32,
    precision="fp32", optimizer="sgd", data="synthetic", threads=1, device="cpu")
place = {"gang": sys.argv[1], "rank": int(sys.argv[2]), "world_size": 2, "host_ranks": 1}
document = train_in_gang(training, place, make_store(settings),
    store_endpoint=settings.s3_endpoint, timeout_s=60)
print(json.dumps({**document["data_parallel"], "ifname": os.environ["GLOO_SOCKET_IFNAME"]}))
"""


def _start_gang(hosts: NetnsStack) -> list[subprocess.Popen[str]]:
    """Rank 0 on the first agent host, rank 1 on the second."""
    return [
        hosts.popen(host.role, [sys.executable, "-c", RANK, "gang-netns", str(rank)])
        for rank, host in enumerate(hosts.agent_hosts[:2])
    ]


def _check_gang(hosts: NetnsStack, ranks: list[subprocess.Popen[str]]) -> None:
    """Rank 0 published the address the other host reaches it at (its hostname resolves
    nowhere here, as in many containers, and to 127.0.1.1 on Debian), and both ranks
    talked over their hosts' interfaces and ended with the same weights."""
    first = hosts.agent_hosts[0]
    sections = []
    for rank in ranks:
        out, errors = rank.communicate(timeout=120)
        assert rank.returncode == 0, out + errors[-3000:]
        sections.append(json.loads(out.strip().splitlines()[-1]))
    assert [s["rendezvous"]["host"] for s in sections] == [first.address] * 2, sections
    assert [s["ifname"] for s in sections] == ["eth0", "eth0"], sections
    assert sections[0]["weight_digest"] == sections[1]["weight_digest"], sections
