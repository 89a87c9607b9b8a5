"""Using a running stack through its API: `benchstack submit` and `cancel`."""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from services.cli.api_options import API_SERVER, API_TOKEN
from services.cli.errors import fail, user_errors
from services.cli.figure_cells import figure_cell
from services.cli.progress import evaluation_progress
from services.cli.render import figure, host_text
from services.core.shown_figures import (
    OFFLINE_LATENCY_NOTE,
    figure_named,
    is_offline,
    shown_figures,
)
from services.core.stored_report import load_loadgen_report
from shared.db.states import FINAL_STATE_NAMES
from shared.settings import get_settings

console = Console(highlight=False)
# --duration too, as `bench` spells it, so a command line moves between them unchanged.
MIN_DURATION = typer.Option(
    None, "--min-duration", "--duration", help="Seconds; shortcut for min_duration_s."
)


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
    min_duration: float | None = MIN_DURATION,
    batch_size: int = typer.Option(1, min=1),
    option: list[str] = typer.Option(
        [], "--option", "-o", help="Backend option KEY=VALUE, as for `bench`, e.g. fail_every=3."
    ),
    dataset: str = typer.Option("synthetic"),
    samples: int = typer.Option(64, min=1),
    seed: int = typer.Option(0),
    threads: int | None = typer.Option(
        None, help="Intra-op threads for this run, over the agent's own setting (1..256)."
    ),
    trace_level: str = typer.Option(
        "NONE", "--trace-level", help="NONE | MODEL | FRAMEWORK | LIBRARY | SYSTEM | FULL."
    ),
    preprocessing: str | None = typer.Option(
        None,
        "--preprocessing",
        help="reference (torchvision's bits) | fast (at most one level off, 2 to 3 times "
        "quicker to prepare); default: the manifest's.",
    ),
    server: str | None = API_SERVER,
    token: str | None = API_TOKEN,
    wait: bool = typer.Option(True, help="Follow progress until the evaluation ends."),
) -> None:
    """Submit an evaluation through the API and follow it to the end."""
    from services.cli.bench_options import parse_options
    from services.cli.remote import submit_evaluation

    server = server or get_settings().api_url
    settings = _scenario_settings(settings_json, min_duration)
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
        "threads": threads,
        "traceLevel": trace_level.upper(),
        "preprocessing": preprocessing,
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
    _print_runs(final)


def _scenario_settings(settings_json: str, min_duration: float | None) -> dict[str, Any]:
    """--settings as a dict, with --min-duration over its min_duration_s."""
    try:
        settings: dict[str, Any] = json.loads(settings_json)
    except json.JSONDecodeError as exc:
        fail([f"settings: not JSON ({exc})"])
    if min_duration is not None:
        settings["min_duration_s"] = min_duration
    return settings


def _figures_text(run: dict[str, Any]) -> str:
    """The run's figures as the one rule gives them (services/core/shown_figures.py): each
    with its interval and BUSY where the host was busy; no p90 for an Offline run."""
    figures = shown_figures(run.get("report"))
    if not figures:  # a workload's own outcome (training, bricks): its page says the rest
        return f"{figure(run['samplesPerSecond'], '.2f')} samples/s"
    text = f"{figure_cell(figures, 'samples_per_second')} samples/s"
    if figure_named(figures, "latency_p90"):
        return text + f", p90 {figure_cell(figures, 'latency_p90', '.3f')} ms"
    if is_offline(load_loadgen_report(run.get("report"))):
        return text + f" ({OFFLINE_LATENCY_NOTE})"
    return text


def _print_runs(final: dict[str, Any]) -> None:
    """One line per run of a finished evaluation, with its likely causes and host."""
    for run in final["runs"]:
        console.print(
            f"run {run['id'][:8]}: {_figures_text(run)}, {run['validity']}, "
            f"{run.get('stability') or 'stability unknown'}"
            + (", preprocessing reused" if final["preprocessReused"] else "")
        )
        report = load_loadgen_report(run.get("report"))
        for hint in report.hints:
            console.print(f"  likely cause: {escape(hint)}")
        host = host_text(report.host)
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
    console.print(comparison_table(comparison, console.width))
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
            now = evaluation_progress(evaluation)
            progress.update(bar, description=now.state, completed=now.percent, detail=now.detail)
            if now.state in FINAL_STATE_NAMES:
                return evaluation
            time.sleep(0.3)


def cancel(
    evaluation_id: str = typer.Argument(..., help="The evaluation (or, with --group, group) id."),
    group: bool = typer.Option(
        False,
        "--group",
        help="The id is a group's (fan-out, sweep, find-peak, repeats, ...): cancel every "
        "unfinished member and stop it submitting more.",
    ),
    server: str | None = API_SERVER,
    token: str | None = API_TOKEN,
) -> None:
    """Cancel an evaluation, or a whole group; a run being measured is ended and its agent
    freed."""
    from services.cli.remote import cancel_evaluation, cancel_group

    url = server or get_settings().api_url
    with user_errors():
        if group:
            found = cancel_group(url, token, evaluation_id)
            console.print(
                f"group {evaluation_id}: {len(found['cancelled'])} cancelled, "
                f"{len(found['alreadyFinished'])} had already ended"
            )
            return
        state = cancel_evaluation(url, token, evaluation_id)
    console.print(f"evaluation {evaluation_id} {state}")


def register(app: typer.Typer) -> None:
    app.command("submit")(submit)
    app.command("cancel")(cancel)
