"""The service stack spread over "hosts" on one machine: Linux network namespaces joined
by veth pairs on a bridge, each host with its own hostname, HOME, data folder, host-slot
folder and /tmp, nothing shared with the others but the network.

    db       Postgres, Redis, moto's S3 server
    api      the API, the scheduler and the aggregator
    prep     the preprocess worker
    agent-N  one inference agent each (null backend)
    client   nothing runs there: the CLI and GraphQL calls of a user

The bridge lives in a namespace of its own, so the root namespace gets no interface and
no address: a service that reached for 127.0.0.1 (the machine's own Postgres, Redis)
would find its own namespace's empty loopback and fail. Every process starts with an
environment built here from nothing (``env -i``), so nothing of the caller's leaks in.

Needs root (``ip netns``, ``mount --bind``). By hand (docs/multi-host.md)::

    sudo PYTHONPATH=$PWD python -m tests.support.netns_stack up --agents 2
    sudo PYTHONPATH=$PWD python -m tests.support.netns_stack exec ROOT client -- \\
        python -m services.cli.main submit resnet18 --framework null --fan-out ...
    sudo PYTHONPATH=$PWD python -m tests.support.netns_stack down ROOT
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from services.stack.manager import ServiceSpec, Stack

REPO = Path(__file__).resolve().parents[2]
# A private /24 that only these namespaces use; each stack has its own bridge, so two
# stacks up at once may both use it without meeting.
DEFAULT_SUBNET = "10.213.37"
POSTGRES_PORT, REDIS_PORT, S3_PORT, API_PORT = 5432, 6379, 9000, 8000
S3_ACCESS_KEY, S3_SECRET_KEY = "netns-access", "netns-secret-key"
STATE_FILE = "netns-stack.json"
# What a process inside a host may inherit from the caller: enough to find programs and
# print text; every BENCHSTACK_ setting is this module's own.
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "COLUMNS")

# Run inside each host: its own hostname (a UTS namespace) and its own /tmp (a mount
# namespace with the host's tmp folder bound over it), then the command, from its HOME.
HOST_WRAPPER = 'hostname "$1" && mount --bind "$2" /tmp && cd "$3" && shift 3 && exec "$@"'


def unavailable_reason() -> str:
    """Why network namespaces cannot be made here, or "" when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns, mount --bind)"
    for tool in ("ip", "unshare", "setpriv", "env", "bash"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    if postgres_bin() is None:
        return "no Postgres server binaries under /usr/lib/postgresql/*/bin"
    probe = f"bsprobe-{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return ""


def postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    return found[-1].parent if found else None


@dataclass(frozen=True)
class Host:
    role: str  # db, api, prep, client, agent-1 ...
    namespace: str
    address: str
    hostname: str
    folder: str  # home/, data/, slots/ and tmp/ under it

    @property
    def home(self) -> Path:
        return Path(self.folder) / "home"

    @property
    def data_dir(self) -> Path:
        return Path(self.folder) / "data"

    @property
    def slot_dir(self) -> Path:
        return Path(self.folder) / "slots"

    @property
    def tmp_dir(self) -> Path:
        return Path(self.folder) / "tmp"


@dataclass
class NetnsStack:
    """``create()``, ``start_servers()``, ``start_services()``; ``close()`` undoes all of it,
    also after a partial start."""

    agents: int = 2
    subnet: str = DEFAULT_SUBNET
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    # Outside /tmp: each host binds its own folder over /tmp, which would hide the others.
    root: str = field(
        default_factory=lambda: tempfile.mkdtemp(prefix="benchstack-netns-", dir="/var/tmp")
    )
    hosts: dict[str, Host] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)  # namespaces made so far

    def __post_init__(self) -> None:
        if not 1 <= self.agents <= 8:
            raise ValueError(f"agents: {self.agents} must be from 1 to 8")
        try:
            network = ipaddress.ip_network(f"{self.subnet}.0/24")
        except ValueError:
            network = None
        if network is None or network.version != 4 or not network.is_private:
            raise ValueError(
                f"subnet: {self.subnet!r} is not the first three octets of a private IPv4 "
                "/24; accepted e.g. 10.213.37 or 192.168.77"
            )
        if not self.hosts:
            roles = ["db", "api", "prep", "client"] + [
                f"agent-{n}" for n in range(1, self.agents + 1)
            ]
            for index, role in enumerate(roles):
                self.hosts[role] = Host(
                    role=role,
                    namespace=f"bs{self.tag}-{role}",
                    address=f"{self.subnet}.{index + 2}",
                    hostname=f"bs-{role}",
                    folder=str(Path(self.root) / role),
                )

    @property
    def bridge_namespace(self) -> str:
        return f"bs{self.tag}-net"

    @property
    def agent_hosts(self) -> list[Host]:
        return [h for role, h in self.hosts.items() if role.startswith("agent-")]

    @property
    def api_url(self) -> str:
        return f"http://{self.hosts['api'].address}:{API_PORT}"

    @property
    def database_url(self) -> str:
        db = self.hosts["db"].address
        return f"postgresql+psycopg2://postgres@{db}:{POSTGRES_PORT}/benchstack"

    # -- the network --------------------------------------------------------------------

    def create(self) -> None:
        """The namespaces, the bridge and one veth pair per host; the host folders."""
        os.chmod(self.root, 0o755)  # Postgres runs as its own user under it
        self._save_state()
        _ip("netns", "add", self.bridge_namespace)
        self.created.append(self.bridge_namespace)
        self._save_state()
        _ip("-n", self.bridge_namespace, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.bridge_namespace, "link", "set", "br0", "up")
        for host in self.hosts.values():
            _ip("netns", "add", host.namespace)
            self.created.append(host.namespace)
            self._save_state()
            peer = f"v-{host.role}"[:15]
            # Both ends are made inside their namespaces: nothing appears in the root one.
            _ip(
                "-n", host.namespace, "link", "add", "eth0", "type", "veth",
                "peer", "name", peer, "netns", self.bridge_namespace,
            )  # fmt: skip
            _ip("-n", self.bridge_namespace, "link", "set", peer, "master", "br0", "up")
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.namespace, "link", "set", "eth0", "up")
            _ip("-n", host.namespace, "link", "set", "lo", "up")
            for folder in (host.home, host.data_dir, host.slot_dir, host.tmp_dir):
                folder.mkdir(parents=True, exist_ok=True)
            host.tmp_dir.chmod(0o1777)

    # -- processes in a host ------------------------------------------------------------

    def env_for(self, host: Host) -> dict[str, str]:
        """A host's whole environment: its own folders and hostname, the servers at the db
        host's address, the API at the api host's."""
        db = self.hosts["db"].address
        env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
        env.update(
            {
                "HOME": str(host.home),
                "TMPDIR": "/tmp",
                "PYTHONPATH": str(REPO),
                "PYTHONUNBUFFERED": "1",
                "BENCHSTACK_ENVIRONMENT": "development",
                "BENCHSTACK_DATA_DIR": str(host.data_dir),
                "BENCHSTACK_HOST_SLOT_DIR": str(host.slot_dir),
                "BENCHSTACK_DATABASE_URL": self.database_url,
                "BENCHSTACK_BROKER_URL": f"redis://{db}:{REDIS_PORT}/0",
                "BENCHSTACK_S3_ENDPOINT": f"{db}:{S3_PORT}",
                "BENCHSTACK_S3_ACCESS_KEY": S3_ACCESS_KEY,
                "BENCHSTACK_S3_SECRET_KEY": S3_SECRET_KEY,
                "BENCHSTACK_S3_BUCKET": "benchstack-netns",
                "BENCHSTACK_API_URL": self.api_url,
                "BENCHSTACK_API_WORKERS": "1",
                "BENCHSTACK_AGENT_HEARTBEAT_SECONDS": "1",
                "BENCHSTACK_SWEEP_INTERVAL_SECONDS": "2",
                "BENCHSTACK_SHARD_SAMPLES": "8",
            }
        )
        if host.role.startswith("agent-"):
            number = host.role.split("-", 1)[1]
            # What each agent's reports must show as its own: the machine it declares
            # and an environment variable the report's environment records.
            env["BENCHSTACK_AGENT_MACHINE"] = f"netns/{host.role}"
            env["OMP_NUM_THREADS"] = number
        return env

    def argv_in(self, host: Host, argv: list[str], env: dict[str, str] | None = None) -> list[str]:
        """``argv`` as run on ``host``: in its namespace, with its hostname, /tmp, HOME and
        environment (``env`` on top of ``env_for``)."""
        environment = {**self.env_for(host), **(env or {})}
        return [
            "ip", "netns", "exec", host.namespace,
            "env", "-i", *[f"{k}={v}" for k, v in environment.items()],
            "unshare", "--uts", "--mount", "--propagation", "private",
            "sh", "-c", HOST_WRAPPER, "sh", host.hostname, str(host.tmp_dir), str(host.home),
            *argv,
        ]  # fmt: skip

    def run(
        self,
        role: str,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        timeout_s: float = 120,
        check: bool = True,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command on a host to its end; ``check``: fail with its output if it fails."""
        result = subprocess.run(
            self.argv_in(self.hosts[role], argv, env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            input=stdin,
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"on {role}: {' '.join(argv)} exited {result.returncode}\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def popen(self, role: str, argv: list[str]) -> subprocess.Popen[str]:
        """Start a command on a host; its output is read with ``communicate()``."""
        return subprocess.Popen(
            self.argv_in(self.hosts[role], argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )

    def python(self, role: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run(role, [sys.executable, *args], **kwargs)

    def cli(self, role: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """``benchstack ARGS`` as typed on that host."""
        return self.python(role, "-m", "services.cli.main", *args, **kwargs)

    def _stack(self, host: Host) -> Stack:
        return Stack(host.data_dir)

    def _stop_host(self, host: Host) -> None:
        with contextlib.suppress(Exception):
            self._stack(host).stop(grace_s=10)

    def _start(self, host: Host, specs: list[ServiceSpec]) -> Stack:
        stack = self._stack(host)
        wrapped = [ServiceSpec(s.name, self.argv_in(host, s.argv)) for s in specs]
        stack.start(wrapped)
        return stack

    # -- servers and services -----------------------------------------------------------

    def start_servers(self, *, timeout_s: float = 60) -> None:
        """Postgres, Redis and S3 on the db host, bound to its address only."""
        db = self.hosts["db"]
        pg_data = Path(db.folder) / "postgres"
        pg_data.mkdir()
        shutil.chown(pg_data, "postgres", "postgres")
        bin_dir = postgres_bin()
        assert bin_dir is not None, unavailable_reason()
        as_postgres = ["setpriv", "--reuid", "postgres", "--regid", "postgres", "--clear-groups"]
        subprocess.run(
            [*as_postgres, str(bin_dir / "initdb"), "-D", str(pg_data), "-U", "postgres",
             "-A", "trust", "--no-sync", "-E", "UTF8"],
            check=True, capture_output=True, cwd="/",
        )  # fmt: skip
        # Clients come from the other hosts' addresses: trusted, from this subnet only.
        with (pg_data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all postgres {self.subnet}.0/24 trust\n")
        postgres = [
            *as_postgres, str(bin_dir / "postgres"), "-D", str(pg_data),
            "-c", f"listen_addresses={db.address}", "-p", str(POSTGRES_PORT),
            "-c", "unix_socket_directories=", "-c", "fsync=off",
            "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        ]  # fmt: skip
        redis = [
            "redis-server", "--bind", db.address, "--port", str(REDIS_PORT), "--save", "",
            "--appendonly", "no", "--protected-mode", "no", "--dir", str(db.data_dir),
        ]  # fmt: skip
        s3 = [sys.executable, "-m", "moto.server", "-H", db.address, "-p", str(S3_PORT)]
        self._start(
            db,
            [ServiceSpec("postgres", postgres), ServiceSpec("redis", redis), ServiceSpec("s3", s3)],
        )
        for port in (POSTGRES_PORT, REDIS_PORT, S3_PORT):
            self.wait_tcp(db.address, port, timeout_s=timeout_s)

    def start_services(self, *, timeout_s: float = 90, wait: bool = True) -> None:
        """The schema (``benchstack db upgrade`` on the api host), then every service,
        each in its host; ``wait``: returns once the API answers from the client host."""
        self.cli("api", "db", "upgrade", timeout_s=timeout_s)
        entry = [sys.executable, "-m", "services.stack.entry"]
        api = self.hosts["api"]
        self._start(
            api,
            [
                ServiceSpec("api", [*entry, "api", "--host", api.address, "--port", str(API_PORT)]),
                ServiceSpec("scheduler", [*entry, "worker", "scheduler"]),
                ServiceSpec("aggregator", [*entry, "worker", "aggregator"]),
            ],
        )
        self._start(
            self.hosts["prep"],
            [ServiceSpec("preprocess", [*entry, "worker", "preprocess", "--concurrency", "1"])],
        )
        for host in self.agent_hosts:
            inference = [*entry, "worker", "inference", "--framework", "null"]
            self._start(host, [ServiceSpec("inference", inference)])
        if wait:
            self.wait_http(self.api_url + "/healthz", timeout_s=timeout_s)

    def wait_tcp(self, address: str, port: int, *, timeout_s: float) -> None:
        """Until ``address:port`` accepts a connection from the client host."""
        loop = (
            f"end=$((SECONDS+{int(timeout_s)})); while [ $SECONDS -lt $end ]; do "
            f"(exec 3<>/dev/tcp/{address}/{port}) 2>/dev/null && exit 0; sleep 0.2; done; exit 1"
        )
        if self.run("client", ["bash", "-c", loop], check=False).returncode != 0:
            raise RuntimeError(f"{address}:{port} did not answer in {timeout_s:g} s\n{self.logs()}")

    def wait_http(self, url: str, *, timeout_s: float) -> None:
        loop = (
            f"end=$((SECONDS+{int(timeout_s)})); while [ $SECONDS -lt $end ]; do "
            f"curl -sf --max-time 2 -o /dev/null {url} && exit 0; sleep 0.3; done; exit 1"
        )
        if self.run("client", ["bash", "-c", loop], check=False).returncode != 0:
            raise RuntimeError(f"{url} did not answer in {timeout_s:g} s\n{self.logs()}")

    def graphql(
        self, token: str, query: str, variables: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A GraphQL request from the client host; its ``data``."""
        script = (
            "import json, sys, httpx; body = json.load(sys.stdin); "
            "r = httpx.post(sys.argv[1] + '/graphql', json=body, timeout=30, "
            "headers={'Authorization': 'Bearer ' + sys.argv[2]}); "
            "r.raise_for_status(); print(r.text)"
        )
        body = json.dumps({"query": query, "variables": variables or {}})
        result = self.python("client", "-c", script, self.api_url, token, stdin=body)
        answer: dict[str, Any] = json.loads(result.stdout)
        if answer.get("errors"):
            raise RuntimeError(f"GraphQL errors: {answer['errors']}")
        data: dict[str, Any] = answer["data"]
        return data

    def wait_agents(self, token: str, *, timeout_s: float = 60) -> list[dict[str, Any]]:
        """Until every agent host's agent is live, asked from the client host (one process
        polls, also while the API is still starting); the live agents."""
        script = (
            "import json, sys, time, httpx\n"
            "url, token, count, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), "
            "time.monotonic() + float(sys.argv[4])\n"
            "while True:\n"
            "    try:\n"
            "        r = httpx.post(url + '/graphql', timeout=10, headers={'Authorization': "
            "'Bearer ' + token}, json={'query': '{ agents { id hostname settings } }'})\n"
            "        agents = r.json()['data']['agents']\n"
            "    except httpx.TransportError:  # the API is still starting\n"
            "        agents = []\n"
            "    if len(agents) >= count or time.monotonic() > end:\n"
            "        print(json.dumps(agents)); break\n"
            "    time.sleep(0.3)\n"
        )
        count = str(len(self.agent_hosts))
        result = self.python("client", "-c", script, self.api_url, token, count, str(timeout_s))
        agents: list[dict[str, Any]] = json.loads(result.stdout)
        if len(agents) < len(self.agent_hosts):
            raise RuntimeError(f"only {len(agents)} agents registered: {agents}\n{self.logs()}")
        return agents

    def namespace_pids(self, role: str) -> list[int]:
        namespace = self.hosts[role].namespace
        out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def logs(self) -> str:
        parts = []
        for host in self.hosts.values():
            for path in sorted((host.data_dir / "logs").glob("*.log")):
                text = path.read_text(errors="replace")[-3000:]
                parts.append(f"===== {host.role}: {path.name}\n{text}")
        return "\n".join(parts)

    # -- state, so that `down` from another process finds everything --------------------

    def _save_state(self) -> None:
        state = {
            "agents": self.agents, "subnet": self.subnet, "tag": self.tag, "root": self.root,
            "created": self.created, "hosts": {r: asdict(h) for r, h in self.hosts.items()},
        }  # fmt: skip
        (Path(self.root) / STATE_FILE).write_text(json.dumps(state, indent=2))

    @classmethod
    def load(cls, root: str) -> NetnsStack:
        path = Path(root) / STATE_FILE
        if not path.is_file():
            raise ValueError(f"root: {root} holds no {STATE_FILE}; give the folder `up` printed")
        state = json.loads(path.read_text())
        hosts = {r: Host(**h) for r, h in state.pop("hosts").items()}
        return cls(hosts=hosts, **state)

    def close(self) -> None:
        """Stop every service (the servers last), end whatever is still inside the
        namespaces, delete them and the folders."""
        # The services of every host at once (each stop waits out Celery's warm shutdown),
        # then the servers they used.
        services = [h for h in self.hosts.values() if h.role != "db"]
        with ThreadPoolExecutor(len(services)) as pool:
            list(pool.map(self._stop_host, services))
        self._stop_host(self.hosts["db"])
        for namespace in self.created:
            # Only processes of our own namespaces (a measurement child, a CLI call cut
            # short): their ids, one by one.
            out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
            for pid in out.stdout.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        for namespace in reversed(self.created):
            subprocess.run(["ip", "netns", "delete", namespace], capture_output=True)
        self.created.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")


def up(agents: int, subnet: str) -> NetnsStack:
    """Everything, started; on any failure what was made is undone."""
    stack = NetnsStack(agents=agents, subnet=subnet)
    try:
        stack.create()
        stack.start_servers()
        stack.start_services()
    except BaseException:
        stack.close()
        raise
    return stack


def _print_up(stack: NetnsStack, token: str) -> None:
    me = f"PYTHONPATH={REPO} {sys.executable} -m tests.support.netns_stack"
    print(f"stack up under {stack.root}")
    for host in stack.hosts.values():
        print(f"  {host.role:<8} {host.namespace:<18} {host.address:<14} hostname {host.hostname}")
    print(f"API {stack.api_url}, token {token}")
    print("try:")
    print(
        f"  {me} exec {stack.root} client -- {sys.executable} -m services.cli.main submit "
        f"resnet18 --framework null --fan-out --min-duration 1 --samples 16 "
        f"--settings '{{\"target_qps\": 400}}' -o service_time_ms=2 --token {token}"
    )
    print(f"  {me} down {stack.root}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.netns_stack")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("up", help="make the hosts and start everything; prints its folder")
    start.add_argument("--agents", type=int, default=2, help="inference hosts (1 to 8)")
    start.add_argument("--subnet", default=DEFAULT_SUBNET, help="first three octets of a /24")
    run = sub.add_parser("exec", help="run a command on one host: exec ROOT ROLE -- CMD...")
    run.add_argument("root")
    run.add_argument("role")
    run.add_argument("argv", nargs=argparse.REMAINDER)
    stop = sub.add_parser("down", help="stop everything and delete the hosts")
    stop.add_argument("root")
    args = parser.parse_args(argv)
    if args.command == "up":
        try:
            NetnsStack(agents=args.agents, subnet=args.subnet, root="")  # the input's checks
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        reason = unavailable_reason()
        if reason:
            print(f"cannot make network namespaces here: {reason}", file=sys.stderr)
            return 1
        stack = up(args.agents, args.subnet)
        token = stack.cli("api", "token", "create", "--user", "netns", "--no-save")
        _print_up(stack, token.stdout.strip())
        return 0
    try:
        stack = NetnsStack.load(args.root)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.command == "down":
        stack.close()
        print(f"stopped; removed {args.root}")
        return 0
    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if args.role not in stack.hosts:
        print(f"role: {args.role!r}; accepted: {', '.join(stack.hosts)}", file=sys.stderr)
        return 2
    if not command:
        print("command: give one after --, e.g. exec ROOT client -- hostname", file=sys.stderr)
        return 2
    return subprocess.run(stack.argv_in(stack.hosts[args.role], command)).returncode


if __name__ == "__main__":
    sys.exit(main())
