"""The distributed stack from the command line: api, worker, up, down, submit, token, db."""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime, timedelta
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from services.cli.errors import fail, user_errors
from services.cli.render import figure, host_text
from shared.db.states import FINAL_STATE_NAMES
from shared.settings import get_settings

console = Console(highlight=False)

token_app = typer.Typer(help="API tokens.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)

# Progress weight of each state, for one bar across the whole evaluation.
_STAGE_WEIGHT = {"QUEUED": 0, "PREPROCESSING": 10, "RUNNING": 60, "AGGREGATING": 90}


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
        0, min=0, help="Inference: intra-op threads for every backend (0: framework default)."
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
        fail([f"threads: {value!r}: each count must be 0 (framework default) or more"])
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
    timeout: float = typer.Option(180.0, min=1, max=3600, help="Seconds to wait for readiness."),
) -> None:
    """Start the API and every worker as local processes (logs under data_dir/logs).

    A service is reported started only when it answers: the API its /readyz, each worker
    a Celery ping. If one dies or does not answer, its log's last lines are shown, the
    others are stopped and the exit code is 1."""
    from services.stack.manager import Stack, default_services
    from services.stack.readiness import log_tail, wait_until_ready
    from shared.celery_app import make_celery
    from shared.db.migrations import upgrade_head
    from shared.processes import exit_text

    settings = get_settings()
    counts = _thread_counts(threads)
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
    with user_errors():
        try:
            started = stack.start(specs)
        except RuntimeError as exc:
            fail([str(exc)])
    console.print(f"starting {', '.join(s.name for s in started)} (logs in {stack.log_dir})")
    url = f"http://{host}:{port}"

    def report(result: Any) -> None:
        if result.ready:
            service = next(s for s in started if s.name == result.name)
            console.print(f"started {result.name:<12} pid {service.pid:<7} {escape(result.detail)}")
        else:
            console.print(f"[red]{result.name} is not up:[/] {escape(result.detail)}")

    results = wait_until_ready(
        started,
        exit_code=stack.exit_code,
        ready_dir=stack.ready_dir,
        api_url=url,
        celery_app=make_celery(settings),
        timeout_s=timeout,
        on_ready=report,
    )
    failed = [r.name for r in results if not r.ready]
    if failed:
        stack.stop()
        fail([f"up: {', '.join(failed)} did not start; the stack was stopped"])
    console.print(f"API ready: {url}/graphql")
    if detach:
        return
    console.print("Ctrl-C stops the stack.")

    def _terminate(*_: Any) -> None:
        raise KeyboardInterrupt

    def _died(service: Any, code: int) -> None:
        console.print(
            f"[red]{service.name} {exit_text(code)}; last lines of {service.log}:[/]\n"
            + escape(log_tail(service.log))
        )

    # Both explicitly: a shell may start `up` with SIGINT ignored (e.g. in the background).
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    try:
        stack.watch(_died)
    except KeyboardInterrupt:
        console.print("stopping ...")
        dead = [s.name for s in stack.dead()]
        killed = stack.stop()
        console.print(
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
        console.print(f"[red]{service.name} had died before `down`; see {service.log}[/]")


def submit(
    model: str = typer.Argument(..., help="A registered or catalogue model name."),
    version: str | None = typer.Option(None),
    framework: str | None = typer.Option(None, help="Backend; default: the manifest's."),
    device: str | None = typer.Option(None, help="Default: a device= term's, else cpu."),
    require: list[str] = typer.Option(
        [],
        "--require",
        "-r",
        help="An agent constraint, repeatable: 'onnxruntime>=1.20', 'arch=x86_64', 'gpu', "
        "'!gpu', 'host=NAME', 'memory>=16GiB', 'threads=2', 'cores>=8'.",
    ),
    fan_out: bool = typer.Option(
        False, "--fan-out", help="Run on every matching agent and print one comparison."
    ),
    scenario: str = typer.Option("offline"),
    settings_json: str = typer.Option(
        "{}", "--settings", help="Scenario settings as JSON, e.g. '{\"min_duration_s\": 1}'."
    ),
    min_duration: float | None = typer.Option(None, help="Seconds; shortcut for min_duration_s."),
    batch_size: int = typer.Option(1, min=1),
    option: list[str] = typer.Option(
        [], "--option", "-o", help="Backend option KEY=VALUE, as for `bench`, e.g. fail_every=3."
    ),
    dataset: str = typer.Option("synthetic"),
    samples: int = typer.Option(64, min=1),
    seed: int = typer.Option(0),
    server: str | None = typer.Option(None, help="API URL; default BENCHSTACK_API_URL."),
    token: str | None = typer.Option(None, envvar="BENCHSTACK_TOKEN"),
    wait: bool = typer.Option(True, help="Follow progress until the evaluation ends."),
) -> None:
    """Submit an evaluation through the API and follow it to the end."""
    from services.cli.commands.bench import parse_options
    from services.cli.remote import submit_evaluation

    server = server or get_settings().api_url
    try:
        settings: dict[str, Any] = json.loads(settings_json)
    except json.JSONDecodeError as exc:
        fail([f"settings: not JSON ({exc})"])
    if min_duration is not None:
        settings["min_duration_s"] = min_duration
    payload: dict[str, Any] = {
        "model": model,
        "version": version,
        "framework": framework,
        "device": device,
        "scenario": scenario,
        "settings": settings,
        "batchSize": batch_size,
        "backendOptions": parse_options(option) or None,
        "dataset": dataset,
        "samples": samples,
        "seed": seed,
        "constraints": {"require": require} if require else None,
        "fanOut": fan_out,
    }
    with user_errors():
        evaluation_id = submit_evaluation(server, token, payload)
    if fan_out:
        _fan_out(server, token, evaluation_id, wait=wait)
        return
    console.print(f"evaluation {evaluation_id} submitted")
    if not wait:
        return
    with user_errors():
        final = _follow(server, token, evaluation_id)
    if final["state"] != "SUCCEEDED":
        fail([f"evaluation {final['state']}: {final['reason'] or 'no reason given'}"])
    for run in final["runs"]:
        metrics = {m["name"]: m for m in run["metrics"]}
        p90 = metrics.get("latency_p90", {}).get("value")
        console.print(
            f"run {run['id'][:8]}: {figure(run['samplesPerSecond'], '.2f')} samples/s, "
            f"p90 {figure(p90)} ms, {run['validity']}, "
            f"{run.get('stability') or 'stability unknown'}"
            + (", preprocessing reused" if final["preprocessReused"] else "")
        )
        report = run.get("report") or {}
        for hint in report.get("hints") or []:
            console.print(f"  likely cause: {escape(hint)}")
        host = host_text(report.get("host") or {})
        if host:
            console.print(f"  host: {host}")


def _fan_out(server: str, token: str | None, group_id: str, *, wait: bool) -> None:
    from services.cli.comparison import comparison_table, wait_for_comparison
    from services.cli.remote import get_comparison

    console.print(f"fan-out {group_id} submitted (`benchstack compare {group_id}` shows it)")
    if not wait:
        return
    with user_errors(), console.status("waiting for every agent ..."):
        comparison = wait_for_comparison(lambda: get_comparison(server, token, group_id))
    console.print(comparison_table(comparison))
    failed = [r for r in comparison["rows"] if r["state"] != "SUCCEEDED"]
    if failed:
        fail([f"{r['agentId']}: {r['state']}: {r['reason'] or 'no reason given'}" for r in failed])


def _follow(server: str, token: str | None, evaluation_id: str) -> dict[str, Any]:
    from services.cli.remote import get_evaluation

    columns = (
        TextColumn("{task.description:<14}"),
        BarColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("QUEUED", total=100, detail="")
        while True:
            evaluation = get_evaluation(server, token, evaluation_id)
            state = evaluation["state"]
            done = _STAGE_WEIGHT.get(state, 100)
            detail = ""
            if state == "PREPROCESSING" and evaluation["shardsTotal"]:
                share = evaluation["shardsReady"] / evaluation["shardsTotal"]
                done += int(50 * share)
                detail = f"shards {evaluation['shardsReady']}/{evaluation['shardsTotal']}"
            if evaluation.get("reason"):
                # Why it is not moving (e.g. "no live preprocess worker"), said as it happens.
                detail = f"[yellow]{escape(evaluation['reason'])}[/]"
            progress.update(bar, description=state, completed=done, detail=detail)
            if state in FINAL_STATE_NAMES:
                return evaluation
            time.sleep(0.3)


def cancel(
    evaluation_id: str = typer.Argument(..., help="The evaluation to cancel."),
    server: str | None = typer.Option(None, help="API URL; default BENCHSTACK_API_URL."),
    token: str | None = typer.Option(None, envvar="BENCHSTACK_TOKEN"),
) -> None:
    """Cancel an evaluation; a run being measured is ended and its agent freed."""
    from services.cli.remote import cancel_evaluation

    with user_errors():
        state = cancel_evaluation(server or get_settings().api_url, token, evaluation_id)
    console.print(f"evaluation {evaluation_id} {state}")


def token_create(
    user: str = typer.Option("admin", help="The user the token belongs to (created if new)."),
    label: str = typer.Option("", help="A note to tell tokens apart."),
    expires_in: str | None = typer.Option(
        None,
        help="Lifetime, e.g. 30d, 12h, 2w (default: BENCHSTACK_TOKEN_LIFETIME_DAYS, 90d; "
        "at most BENCHSTACK_MAX_TOKEN_LIFETIME_DAYS, 365d).",
    ),
    save: bool = typer.Option(True, help="Also save it for `benchstack submit` (data_dir/token)."),
) -> None:
    """Create an API token (talks to the database directly); it is shown once."""
    from services.api.auth import create_token, parse_lifetime
    from services.cli.remote import save_token
    from shared.db.session import session_scope

    settings = get_settings()
    longest = timedelta(days=settings.max_token_lifetime_days)
    with user_errors():
        lifetime = (
            parse_lifetime(expires_in, longest=longest)
            if expires_in is not None
            else timedelta(days=settings.token_lifetime_days)
        )
    with session_scope(settings.effective_database_url) as session:
        token = create_token(session, user_name=user, label=label, expires_in=lifetime)
    typer.echo(token)
    typer.echo(f"expires in {_span(lifetime)}", err=True)
    if save:
        path = save_token(token)
        typer.echo(f"saved to {path}", err=True)


def _span(lifetime: timedelta) -> str:
    days = lifetime.total_seconds() / 86400
    return f"{days:g} days" if days >= 1 else f"{lifetime.total_seconds() / 3600:g} hours"


def _moment(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "-"


def token_list(
    user: str | None = typer.Option(None, help="Only this user's tokens (default: everyone's)."),
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON on stdout."),
) -> None:
    """List tokens: id, prefix, label, dates and status; never the secret."""
    from rich.table import Table

    from services.api.auth import list_tokens
    from shared.db.clock import utcnow
    from shared.db.session import session_scope

    with session_scope(get_settings().effective_database_url) as session:
        tokens = list_tokens(session, user_name=user)
    now = utcnow()
    if as_json:
        rows = [
            {
                "id": t.id,
                "user": t.user,
                "prefix": t.prefix,
                "label": t.label,
                "created_at": t.created_at.isoformat(),
                "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
                "expires_at": t.expires_at.isoformat(),
                "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
                "status": t.status(now),
            }
            for t in tokens
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    if not tokens:
        console.print("no tokens" + (f" for user {escape(user)}" if user else ""))
        return
    table = Table("id", "user", "prefix", "label", "created", "last used", "expires", "status")
    for t in tokens:
        table.add_row(
            str(t.id),
            escape(t.user),
            t.prefix,
            escape(t.label),
            _moment(t.created_at),
            _moment(t.last_used_at),
            _moment(t.expires_at),
            t.status(now) + (f" {_moment(t.revoked_at)}" if t.revoked_at else ""),
        )
    console.print(table)


def token_revoke(
    reference: str = typer.Argument(
        ..., metavar="PREFIX_OR_ID", help="A token's id or prefix (see `token list`)."
    ),
) -> None:
    """Revoke a token: requests carrying it get 401 (within API_TOKEN_CACHE_SECONDS, 5 s)."""
    from services.api.auth import revoke_token
    from shared.db.session import session_scope

    with user_errors(), session_scope(get_settings().effective_database_url) as session:
        token, revoked_now = revoke_token(session, reference)
    what = f"token {token.id} ({token.prefix}…, user {escape(token.user)})"
    if revoked_now:
        console.print(f"revoked {what}")
    else:
        console.print(f"{what} was revoked already at {_moment(token.revoked_at)}")


def db_upgrade() -> None:
    """Create the configured database if the server lacks it, then migrate it to the
    newest schema."""
    from shared.db.migrations import create_database_if_missing, upgrade_head

    settings = get_settings()
    url = settings.effective_database_url
    if create_database_if_missing(url):
        console.print(f"created database {url.split('@')[-1]}")
    upgrade_head(url)
    console.print(
        f"database at the newest schema: {settings.effective_database_url.split('@')[-1]}"
    )


def register(app: typer.Typer) -> None:
    app.command("api")(api)
    app.command("worker")(worker)
    app.command("up")(up)
    app.command("down")(down)
    app.command("submit")(submit)
    app.command("cancel")(cancel)
    token_app.command("create")(token_create)
    token_app.command("list")(token_list)
    token_app.command("revoke")(token_revoke)
    db_app.command("upgrade")(db_upgrade)
    app.add_typer(token_app, name="token")
    app.add_typer(db_app, name="db")
