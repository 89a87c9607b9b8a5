"""`benchstack advise MODEL --latency-bound-ms X`: the cheapest system meeting a bound."""

from __future__ import annotations

import json
import platform
import sys
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from services.cli.api_options import API_INSTEAD_OF_DATABASE, API_TOKEN
from services.cli.errors import err_console, user_errors
from services.cli.render import figure, output_console
from services.cli.tables import Justify
from shared.settings import get_settings

console = output_console(highlight=False)

ADVICE_QUERY = """
query Advice($model: String!, $bound: Float!, $percentile: Float!) {
  advice(model: $model, latencyBoundMs: $bound, percentile: $percentile) {
    __typename
    ... on Advice {
      model latencyBoundMs percentile cheapest conclusion missing
      systems {
        system machine framework settings status qps latencyMs runId groupId validity
        stability pricePerHour costPerMillion costUnit notes command
      }
    }
    ... on InvalidInput { message field }
  }
}
"""


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def remote_advice(
    server: str, token: str | None, model: str, bound: float, percentile: float
) -> dict[str, Any]:
    from services.cli.remote import answer_of, graphql

    variables = {"model": model, "bound": bound, "percentile": percentile}
    found = answer_of(graphql(server, token, ADVICE_QUERY, variables)["advice"], "Advice")
    advice = {_snake(k): v for k, v in found.items() if k != "__typename"}
    advice["systems"] = [{_snake(k): v for k, v in s.items()} for s in found["systems"]]
    return advice


def local_advice(model: str, bound: float, percentile: float) -> dict[str, Any]:
    from services.analysis.advice import advise, check_request, load_reports
    from services.core.catalogue import resolve_model
    from shared.db.session import session_scope

    check_request(bound, percentile)
    settings = get_settings()
    with session_scope(settings.effective_database_url) as session:
        reports = load_reports(session, model)
        if not reports:
            # A path or catalogue name as `bench` takes it: runs are stored by model name.
            try:
                name = resolve_model(model).name
            except Exception:
                name = model
            if name != model:
                reports = load_reports(session, name)
                model = name
    price = settings.agent_price_per_hour
    prices = {f"local:{platform.node()}": price} if price is not None else None
    return advise(
        reports, model=model, latency_bound_ms=bound, percentile=percentile, prices=prices
    ).to_dict()


def _unit(system: dict[str, Any]) -> str:
    """What a million of costs: inferences, or a workload's own unit (output tokens)."""
    if system.get("cost_per_million") is None:
        return ""
    unit = str(system.get("cost_unit") or "inferences")
    return (
        " inf." if unit == "inferences" else " out. tok." if unit == "output tokens" else f" {unit}"
    )


def advice_table(advice: dict[str, Any]) -> Table:
    pct = f"p{advice['percentile']:g}"
    table = Table(
        title=f"advice for {advice['model']}: {pct} <= {advice['latency_bound_ms']:g} ms",
        title_justify="left",
    )
    for name in ("system", "status", "QPS", f"{pct} ms", "verdicts", "price/h", "per 1M"):
        # Figures keep one line at a narrow console; names and run ids wrap, never cut.
        words = name in {"system", "status", "verdicts"}
        justify: Justify = "left" if words else "right"
        table.add_column(name, justify=justify, no_wrap=not words, overflow="fold")
    for s in advice["systems"]:
        meets = s["status"] == "meets the bound"
        status = f"[green]{s['status']}[/]" if meets else f"[yellow]{s['status']}[/]"
        table.add_row(
            escape(s["system"]),
            status,
            figure(s["qps"], ".1f"),
            figure(s["latency_ms"], ".2f"),
            f"{s['validity']} {s['stability']}"
            + (f" run {s['run_id'][:8]}" if s["run_id"] else ""),
            figure(s["price_per_hour"], ".4g"),
            figure(s["cost_per_million"], ".4g") + _unit(s),
        )
    return table


def advise_command(
    model: str = typer.Argument(..., help="Model name (or the manifest path `bench` took)."),
    latency_bound_ms: float = typer.Option(..., help="The latency bound, ms."),
    percentile: float = typer.Option(99.0, help="50, 90, 95, 97, 99 or 99.9."),
    server: str | None = API_INSTEAD_OF_DATABASE,
    token: str | None = API_TOKEN,
    measure: bool = typer.Option(
        False,
        "--measure",
        help="With --server: first run find-peak on every live agent of the framework "
        "without a valid peak for this bound, and wait for them.",
    ),
    framework: str | None = typer.Option(
        None,
        "--framework",
        "-f",
        help="With --measure: the agents' framework (default: the model's).",
    ),
    duration: float | None = typer.Option(
        None,
        help="With --measure: each probe's minimum duration, s (default: sized from the "
        "probe's rate and the percentile, as LoadGen's early stopping needs).",
    ),
    max_probes: int = typer.Option(8, help="With --measure: probes per search, 1..16."),
    wait: float = typer.Option(3600.0, help="With --measure: give up waiting after this many s."),
    start_qps: float | None = typer.Option(
        None, help="With --measure: the first probe's rate (default: an Offline run's throughput)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """For each system that measured MODEL: the highest Server QPS under the bound (from
    stored find-peak results), the cost per million inferences where the machine declares a
    price (BENCHSTACK_AGENT_PRICE_PER_HOUR), and the cheapest system meeting the bound."""
    with user_errors():
        if server:
            advice = remote_advice(server, token, model, latency_bound_ms, percentile)
            if measure:
                options = (duration, max_probes, wait, start_qps)
                if measure_missing(
                    server, token, model, framework, advice, options, latency_bound_ms, percentile
                ):
                    advice = remote_advice(server, token, model, latency_bound_ms, percentile)
        elif measure:
            raise ValueError("--measure: runs find-peak on a stack's agents; give --server URL")
        else:
            advice = local_advice(model, latency_bound_ms, percentile)
    if as_json:
        sys.stdout.write(json.dumps(advice, indent=2) + "\n")
        return
    console.print(advice_table(advice))
    console.print(escape(advice["conclusion"]), soft_wrap=True)
    for line in advice["missing"]:
        console.print(f"[yellow]missing:[/] {escape(line)}", soft_wrap=True)
    for s in advice["systems"]:
        for note in s["notes"][1:] if s["status"] != "meets the bound" else s["notes"]:
            console.print(f"note: {escape(s['system'])}: {escape(note)}", soft_wrap=True)
        if s["command"]:
            console.print(f"  measure it: {escape(s['command'])}", soft_wrap=True)


def measure_missing(
    server: str,
    token: str | None,
    model: str,
    framework: str | None,
    advice: dict[str, Any],
    options: tuple[float | None, int, float, float | None],
    bound: float,
    percentile: float,
) -> bool:
    """Run the missing find-peak searches through the stack; False when none was missing."""
    from services.cli.remote_find_peak import (
        check_measure_options,
        follow_searches,
        start_searches,
        unmeasured_agents,
    )
    from services.core.catalogue import resolve_model

    duration, max_probes, wait, start_qps = options
    check_measure_options(duration, max_probes, wait)
    if framework is None:
        try:
            framework = resolve_model(model).framework.name
        except Exception:
            raise ValueError(
                f"--framework: {model!r} is not in the catalogue here; name the agents' framework"
            ) from None
    agents = unmeasured_agents(server, token, framework, advice)
    if not agents:
        err_console.print(f"every live {framework} agent has a valid peak for this bound")
        return False
    searches = start_searches(
        server,
        token,
        model=model,
        agents=agents,
        bound=bound,
        percentile=percentile,
        duration_s=duration,
        max_probes=max_probes,
        start_qps=start_qps,
    )
    for search in searches:
        err_console.print(f"find-peak on {search.agent_id}: group {search.group_id}")
    follow_searches(
        server,
        token,
        searches,
        percentile=percentile,
        wait_s=wait,
        say=lambda line: err_console.print(escape(line), soft_wrap=True),
    )
    return True


def register(app: typer.Typer) -> None:
    app.command("advise")(advise_command)
