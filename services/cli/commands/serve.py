"""Running the stack: `benchstack api`, `worker`, `up` and `down`."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from services.cli.errors import fail, user_errors
from services.cli.tables import Column, fitted_table
from shared.settings import Settings, get_settings

if TYPE_CHECKING:  # services.stack is imported when a command runs, not for `--help`
    from services.stack.detach import Detaching
    from services.stack.manager import RunningService, ServiceSpec, Stack

console = Console(highlight=False)


def api(
    host: str = typer.Option("127.0.0.1"),
    port: int = typer.Option(8000),
) -> None:
    """Serve the GraphQL API (GraphiQL at /graphql)."""
    from services.stack.entry import run_api

    run_api(host, port)


def worker(
    name: str = typer.Argument(..., help="scheduler, preprocess, inference or aggregator"),
    framework: list[str] = typer.Option(
        [],
        "--framework",
        "--frameworks",
        help="Inference: a backend to serve; repeat or comma-separate (default: installed).",
    ),
    device: str = typer.Option("cpu", help="Inference: the device this worker measures on."),
    threads: int = typer.Option(
        0,
        min=0,
        help="Inference: intra-op threads for every backend (0: chosen per run for its "
        "scenario and the free CPUs).",
    ),
    node: str | None = typer.Option(
        None,
        "--name",
        help="Celery node name before '@host' (default: the kind, suffixed if taken here).",
    ),
    concurrency: int | None = typer.Option(None, min=1),
) -> None:
    """Run one Celery worker."""
    from shared import queues

    if name not in queues.WORKER_KINDS:
        fail([f"name: {name!r} is not a worker; accepted: {', '.join(queues.WORKER_KINDS)}"])
    from services.stack.entry import run_worker, split_frameworks

    with user_errors():
        run_worker(
            name,
            frameworks=split_frameworks(framework),
            device=device,
            threads=threads,
            name=node,
            concurrency=concurrency,
        )


def _thread_counts(value: str) -> list[int]:
    try:
        counts = [int(v) for v in value.split(",") if v.strip()] or [0]
    except ValueError:
        fail([f"threads: {value!r} is not a comma-separated list of integers, e.g. 1,2"])
    if any(c < 0 for c in counts):
        fail([f"threads: {value!r}: each count must be 0 (chosen per run) or more"])
    return counts


def up(
    host: str = typer.Option("127.0.0.1"),
    port: int = typer.Option(8000),
    frameworks: str = typer.Option("", help="Inference backends (default: every installed one)."),
    device: str = typer.Option("cpu"),
    threads: str = typer.Option(
        "0",
        help="Inference intra-op threads (0: default); a list (1,2) starts one agent each.",
    ),
    detach: bool = typer.Option(False, "--detach", "-d", help="Return once every service is up."),
    restart: bool = typer.Option(
        True,
        help="Start again a service that exits on its own (else only report its death).",
    ),
    timeout: float = typer.Option(180.0, min=1, max=3600, help="Seconds to wait for readiness."),
) -> None:
    """Start the API and every worker as local processes (logs under data_dir/logs).

    A service is reported started only when it answers: the API its /readyz, each worker
    a Celery ping. If one dies or does not answer, its log's last lines are shown, the
    others are stopped and the exit code is 1. Once up, a service that exits is started
    again, with a doubling delay, unless it keeps dying within a minute of each restart
    (services.stack.supervisor)."""
    from services.stack.detach import fork_and_wait
    from services.stack.manager import Stack, default_services
    from shared.db.migrations import upgrade_head

    settings = get_settings()
    counts = _thread_counts(threads)
    # With -d, the rest runs in a child that stays behind as the services' parent.
    detaching = fork_and_wait() if detach else None
    # Migrate once up front, so five services do not race to do it.
    upgrade_head(settings.effective_database_url)
    stack = Stack(settings.data_dir)
    specs = default_services(
        host=host,
        port=port,
        frameworks=[f for f in frameworks.split(",") if f],
        device=device,
        threads=counts,
    )
    started = _start(stack, specs)
    url = f"http://{host}:{port}"
    _wait_until_up(stack, started, url, settings, timeout)
    console.print(f"API ready: {url}/graphql")
    _supervise(stack, detaching, restart=restart)


def _start(stack: Stack, specs: list[ServiceSpec]) -> list[RunningService]:
    """Start every service's process; a failure or Ctrl-C leaves none running."""
    with user_errors():
        try:
            started = stack.start(specs)
        except RuntimeError as exc:
            fail([str(exc)])
        except KeyboardInterrupt:
            stack.stop()  # also those started before the interrupt and not yet listed
            raise typer.Exit(130) from None
    console.print(f"starting {', '.join(s.name for s in started)} (logs in {stack.log_dir})")
    return started


def _wait_until_up(
    stack: Stack, started: list[RunningService], url: str, settings: Settings, timeout: float
) -> None:
    """Wait until every service answers, printing each as it does; if one does not, the
    stack is stopped and the command fails."""
    from services.stack.readiness import Readiness, wait_until_ready
    from shared.celery_app import make_celery

    def report(result: Readiness) -> None:
        if result.ready:
            service = next(s for s in started if s.name == result.name)
            console.print(f"started {result.name:<12} pid {service.pid:<7} {escape(result.detail)}")
        else:
            console.print(f"[red]{result.name} is not up:[/] {escape(result.detail)}")

    try:
        results = wait_until_ready(
            started,
            exit_code=stack.exit_code,
            ready_dir=stack.ready_dir,
            api_url=url,
            celery_app=make_celery(settings),
            timeout_s=timeout,
            on_ready=report,
        )
    except KeyboardInterrupt:  # Ctrl-C while waiting: nothing is left running unsupervised
        stack.stop()
        console.print("interrupted; the stack was stopped")
        raise typer.Exit(130) from None
    failed = [r.name for r in results if not r.ready]
    if failed:
        stack.stop()
        fail([f"up: {', '.join(failed)} did not start; the stack was stopped"])


def _supervise(stack: Stack, detaching: Detaching | None, *, restart: bool) -> None:
    """Watch the running stack until SIGTERM or Ctrl-C (or `down`), then stop it."""
    from services.stack.supervisor import Event, StackSupervisor
    from shared.processes import this_command_line

    watching = "restarts a service that exits on its own" if restart else "reports deaths only"
    stopping = [False]

    def _terminate(*_: Any) -> None:
        # Only a flag: raising here could land between starting a restarted service and
        # recording it, and `stop` would then miss that process.
        stopping[0] = True

    def _report(event: Event) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S UTC")
        if not event.log_tail:
            out.print(f"{stamp} {escape(event.text)}")
            return
        out.print(
            f"{stamp} [red]{escape(event.text)}[/]; last lines of its log:\n"
            + escape(event.log_tail)
        )

    # Both explicitly: a shell may start `up` with SIGINT ignored (e.g. in the background).
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    # `down` from another terminal stops this process first, which then stops the stack;
    # recorded before `up -d` returns, so a `down` right after it finds this process.
    stack.claim_supervision(os.getpid(), this_command_line(), restarts=restart)
    out = console
    if stopping[0]:  # Ctrl-C (or `down`) came while the handlers went in
        stack.stop()
        raise typer.Exit(130)
    if detaching is not None:
        supervisor_log = stack.log_dir / "supervisor.log"
        out.print(f"supervisor   pid {os.getpid():<7} {watching} (log: {supervisor_log})")
        if not detaching.ready(supervisor_log):
            stack.stop()  # whoever ran `up -d` is gone and was not told it worked
            print("up -d: the command that started the stack is gone; stack stopped", flush=True)
            raise typer.Exit(1)
        # The log: no colours, no wrapping at a terminal's width it does not have.
        out = Console(color_system=None, soft_wrap=True, highlight=False)
    else:
        out.print(f"Ctrl-C stops the stack; meanwhile this process {watching}.")
    StackSupervisor(stack, _report, restart=restart).run(lambda: stopping[0])
    if not stopping[0]:
        return  # the pid file went: stopped by an older `down` that does not signal
    out.print("stopping ...")
    dead = [s.name for s in stack.dead()]
    killed = stack.stop()
    out.print(
        "stopped"
        + (f" (killed: {', '.join(killed)})" if killed else "")
        + (f"; had died before: {', '.join(dead)}" if dead else "")
    )


def down() -> None:
    """Stop a stack started by `benchstack up` (from any terminal)."""
    from services.stack.manager import Stack

    stack = Stack(get_settings().data_dir)
    running = stack.running()
    dead = stack.dead()
    if not running:
        stack.stop_supervisor()  # one may be waiting to restart the dead
        console.print(
            "no stack is running"
            + (f" ({', '.join(s.name for s in dead)} had died)" if dead else "")
        )
        if stack.pid_file.exists():
            stack.pid_file.unlink()
        return
    killed = stack.stop()
    console.print(
        f"stopped {', '.join(s.name for s in running)}"
        + (f" (killed: {', '.join(killed)})" if killed else "")
    )
    for service in dead:
        why = f" ({service.gave_up})" if service.gave_up else ""
        console.print(
            f"[red]{service.name} had died before `down`{escape(why)}; see {service.log}[/]"
        )


# `ps` at a narrow console: the log path wraps, never cut; `last exit` goes first.
PS_COLUMNS = (
    Column("service", priority=100, wrap=False),
    Column("state", priority=90),
    Column("pid", priority=60, wrap=False, justify="right"),
    Column("up", priority=50, wrap=False),
    Column("restarts", priority=40, wrap=False, justify="right"),
    Column("last exit", priority=30),
    Column("log", priority=80, min_width=12),
)


def ps() -> None:
    """Show the services `benchstack up` started: state, pid, time up, restarts, how each
    last ended on its own, and its log.

    Exits 1 when any of them is not running (or no stack is), so scripts can check."""
    from services.cli.render import output_console
    from services.stack.manager import Stack

    stack = Stack(get_settings().data_dir)
    services = stack.recorded()
    if not services:
        console.print(f"no stack is running (none recorded in {stack.pid_file})")
        raise typer.Exit(1)
    supervisor = stack.supervisor_pid()
    restarts = stack.supervisor_restarts()
    cells: list[list[str]] = []
    all_running = True
    for service in services:
        running = stack.is_running(service)
        all_running = all_running and running
        if running:
            state, up_for = "running", _up_for(service.started_at)
        elif service.gave_up:
            state, up_for = f"[red]down: {escape(service.gave_up)}[/]", ""
        elif restarts:
            state, up_for = "[yellow]restarting[/]", ""
        elif supervisor is not None:
            state, up_for = "[red]down (`up --no-restart`)[/]", ""
        else:
            state, up_for = "[red]down (no supervisor)[/]", ""
        cells.append(
            [
                service.name,
                state,
                str(service.pid) if running else "",
                up_for,
                str(service.restarts),
                escape(service.last_exit),
                escape(str(service.log)),
            ]
        )
    out = output_console(highlight=False)
    out.print(fitted_table(PS_COLUMNS, cells, width=out.width, box=None))
    if supervisor is None:
        console.print(
            "no supervisor: a service that exits stays down "
            "(the `up` that started the stack has ended)"
        )
    elif restarts:
        console.print(f"supervisor pid {supervisor}: restarts a service that exits on its own")
    else:
        console.print(f"supervisor pid {supervisor}: reports deaths only (`up --no-restart`)")
    if not all_running:
        raise typer.Exit(1)


def _up_for(started_at: float) -> str:
    import time

    from services.stack.supervisor import duration_text

    if not started_at:
        return "?"  # a pid file written by an older benchstack
    return duration_text(time.time() - started_at)


def register(app: typer.Typer) -> None:
    app.command("api")(api)
    app.command("worker")(worker)
    app.command("up")(up)
    app.command("down")(down)
    app.command("ps")(ps)
