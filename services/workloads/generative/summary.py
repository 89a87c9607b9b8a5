"""What a stored generative document (``generative.json``, kept under a run's report) shows
outside the run: the settings that tell two generative runs apart, its headline figures
with their 95 % intervals, and its fan-out row. Pure Python on the stored document."""

from __future__ import annotations

from typing import Any

from services.core.workload import PricedRate
from services.workloads.generative.figures import UNITS

# The options a reader lines up between generative runs, in the order shown, with a label.
GENERATIVE_SETTINGS: tuple[tuple[str, str], ...] = (
    ("engine", "Engine"),
    ("model", "Model (tokenizer)"),
    ("served_model", "Served model"),
    ("url", "Endpoint"),
    ("api", "API"),
    ("scenario", "Scenario"),
    ("prompts", "Prompts"),
    ("input_tokens", "Input tokens"),
    ("output_tokens", "Output tokens"),
    ("batch_size", "Batch size"),
    ("workers", "Workers"),
    ("target_qps", "Target rate (requests/s)"),
    ("bounds", "Bounds preset"),
)
# The figures a comparison puts side by side: throughput first, then the token latencies.
HEADLINE = ("output_tokens_per_s", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "goodput")
LABELS = {
    "output_tokens_per_s": "Output tokens/s",
    "total_tokens_per_s": "Total tokens/s",
    "requests_per_s": "Requests/s",
    "goodput": "Goodput (requests/s)",
}


def figure_label(name: str) -> str:
    """'Output tokens/s', 'TTFT p50', 'latency p99' for a figure of figures.UNITS."""
    if name in LABELS:
        return LABELS[name]
    figure, _, percentile = name.rpartition("_")
    return f"{'latency' if figure == 'latency' else figure.upper()} {percentile}"


def setting_pairs(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(key, label, value as text) of the run's options in ``GENERATIVE_SETTINGS`` order;
    the served model and the endpoint as the run used them; a missing one is "—"."""
    options = dict(document.get("options") or {})
    engine = document.get("engine") or {}
    options["served_model"] = engine.get("model") or options.get("served_model")
    options["url"] = engine.get("url") or options.get("url")
    return [
        (key, label, "—" if options.get(key) is None else str(options[key]))
        for key, label in GENERATIVE_SETTINGS
    ]


def figure_of(document: dict[str, Any], name: str) -> dict[str, Any]:
    """One stored figure: {"estimate", "low", "high", "reason", "unit"} (empty: none)."""
    found = (document.get("figures") or {}).get(name) or {}
    return {
        "estimate": found.get("estimate"),
        "low": found.get("low"),
        "high": found.get("high"),
        "reason": str(found.get("reason") or ""),
        "unit": str(found.get("unit") or UNITS.get(name, "")),
    }


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def figure_text(document: dict[str, Any], name: str) -> str:
    """'251.3 tokens/s [240.1 - 262.0]' with its 95 % interval, or the estimate alone."""
    f = figure_of(document, name)
    interval = f" [{_number(f['low'])} - {_number(f['high'])}]" if f["low"] is not None else ""
    return f"{_number(f['estimate'])} {f['unit']}{interval}"


def bounds_met(document: dict[str, Any]) -> bool | None:
    """Whether the Server run met its TTFT and TPOT bounds as LoadGen judged them: True
    when it is VALID, False when a reason says a bound was not met, None when it has no
    bounds or LoadGen could not judge them (INVALID for another reason, e.g. too few
    queries for early stopping)."""
    if not document.get("bounds"):
        return None
    verdict = document.get("loadgen") or {}
    if str(verdict.get("validity")) == "VALID":
        return True
    missed = any("constrain not met" in str(r) for r in verdict.get("reasons") or [])
    return False if missed else None


def fan_out_figures(document: dict[str, Any]) -> dict[str, Any]:
    """A generative run's fan-out row (services/api/fan_out.FanOutRow): its requests/s and
    end-to-end p99 intervals where the row keeps LoadGen's, and its token figures."""
    requests, p99 = figure_of(document, "requests_per_s"), figure_of(document, "latency_p99")
    reasons = dict.fromkeys(f["reason"] for f in (requests, p99) if f["reason"])
    return {
        "samples_per_second_low": requests["low"],
        "samples_per_second_high": requests["high"],
        "latency_p99_low_ms": p99["low"],
        "latency_p99_high_ms": p99["high"],
        "interval_reason": "; ".join(reasons),
        "workload_settings": [f"{key}={value}" for key, _, value in setting_pairs(document)],
        "workload_figures": [f"{figure_label(n)}: {figure_text(document, n)}" for n in HEADLINE],
    }


# What makes a generative system beside its machine: the engine and what it serves.
SYSTEM_SETTINGS = ("engine", "served_model", "url", "api", "batch_size", "workers")


def priced_rate(document: dict[str, Any]) -> PricedRate:
    """advise's figure of a generative run (Workload.priced_rate): its output tokens/s,
    quoted when LoadGen judged the Server run VALID against its TTFT and TPOT bounds."""
    settings = {key: value for key, _, value in setting_pairs(document)}
    verdict = document.get("loadgen") or {}
    met = bounds_met(document)
    unjudged = ""
    if not document.get("bounds"):
        unjudged = "no TTFT/TPOT bounds: a Server run with bounds prices output tokens"
    elif not met:
        reasons = list(verdict.get("reasons") or [])
        unjudged = f"LoadGen {verdict.get('validity', 'MISSING')}" + (
            f": {reasons[0]}" if reasons else ""
        )
    return PricedRate(
        per_second=figure_of(document, "output_tokens_per_s")["estimate"],
        unit="output tokens",
        requests_per_second=figure_of(document, "requests_per_s")["estimate"],
        settings={key: settings[key] for key in SYSTEM_SETTINGS},
        unjudged=unjudged,
    )
