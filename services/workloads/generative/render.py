"""A generative run at 80 columns: LoadGen's verdict and reasons, then each figure with
its 95 % interval beside LoadGen's own, then the requests (failed ones by reason)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.workloads.generative.figures import UNITS
from services.workloads.generative.summary import figure_label

# Shorter than the shared labels, for an 80-column table.
_LABELS = {
    "output_tokens_per_s": "output tokens/s",
    "total_tokens_per_s": "total tokens/s",
    "requests_per_s": "requests/s",
    "goodput": "goodput req/s",
}


def _label(name: str) -> str:
    """The figure's label (summary.figure_label), its unit said for a latency."""
    return _LABELS.get(name) or f"{figure_label(name)} (ms)"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def figures_table(document: dict[str, Any]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("figure", "estimate", "95 % interval", "LoadGen"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    ours, theirs = document["figures"], document["loadgen"]["figures"]
    for name in UNITS:
        figure = ours[name]
        interval = (
            f"{_number(figure['low'])} - {_number(figure['high'])}"
            if figure["low"] is not None
            else "-"
        )
        table.add_row(
            _label(name), _number(figure["estimate"]), interval, _number(theirs.get(name))
        )
    return table


def print_generative(console: Console, document: dict[str, Any]) -> None:
    options, prompts, verdict = document["options"], document["prompts"], document["loadgen"]
    engine = document["engine"]
    where = f" at {escape(engine['url'])}" if engine.get("url") else ""
    console.print(
        f"{escape(engine['model'])}  {options['engine']}{where}  {options['scenario']}  "
        f"{prompts['prompts']} prompts ({prompts['input_tokens']} tokens)"
    )
    console.print(f"prompts: {escape(str(prompts.get('source', '')))}")
    bounds = document.get("bounds")
    if bounds:
        console.print(
            f"objectives: TTFT {bounds['ttft_ms']:g} ms, TPOT {bounds['tpot_ms']:g} ms at "
            f"p{bounds['percentile']:g} ({escape(bounds['source'])})"
        )
    if document.get("target_qps"):
        console.print(f"target rate: {document['target_qps']:.3g} requests/s (Poisson)")
    colour = "green" if verdict["validity"] == "VALID" else "red"
    console.print(f"LoadGen: [bold {colour}]{verdict['validity']}[/]")
    for reason in verdict["reasons"]:
        console.print(f"  {escape(reason)}")
    console.print(figures_table(document))
    requests = document["requests"]
    console.print(
        f"requests: {requests['completed']} completed, {requests['failed']} failed; "
        f"{requests['output_tokens']} output tokens"
    )
    for reason, count in requests["failures"].items():
        console.print(f"  [red]failed[/] {count} x {escape(reason)}")
    stability = document["stability"]
    console.print(f"stability: {stability['verdict']}")
    for reason in stability["reasons"]:
        console.print(f"  {escape(reason)}")
    reasons = {f["reason"] for f in document["figures"].values() if f["reason"]}
    for reason in sorted(reasons):
        console.print(f"[dim]no interval: {escape(reason)}[/]")
