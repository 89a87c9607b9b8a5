"""LoadGen's verdict on a generative run and its own token figures, read from its logs
(services/core/loadgen_logs.py): VALID or INVALID with every reason it gives (its
recommendations, e.g. "TTFT constrain not met", its invalid reason, early stopping), and
its TTFT, TPOT, latency and token-rate figures in milliseconds and tokens/s."""

from __future__ import annotations

from typing import Any

from services.core.loadgen_logs import parse_detail, parse_summary

# Our figure -> LoadGen's detail key (nanoseconds), where LoadGen reports one.
_LATENCY_KEYS: dict[str, str] = {
    **{f"ttft_p{p}": f"result_first_token_{p}.00_percentile_latency_ns" for p in (50, 90, 99)},
    **{f"tpot_p{p}": f"result_time_per_output_token_{p}.00_percentile_ns" for p in (50, 90, 99)},
    **{f"latency_p{p}": f"result_{p}.00_percentile_latency_ns" for p in (50, 90, 99)},
}
# LoadGen's token rate: Server's completed tokens/s, Offline's tokens/s, SingleStream's
# throughput (its "TPS w/o loadgen overhead"); the first one present.
_TOKEN_RATE_KEYS = (
    "result_completed_tokens_per_second",
    "result_tokens_per_second",
    "result_token_throughput",
)
_REQUEST_RATE_KEYS = (
    "result_completed_samples_per_sec",
    "result_samples_per_second",
    "result_qps_without_loadgen_overhead",
)


def _bullets(summary_text: str) -> tuple[list[str], list[str]]:
    """The ``* ...`` lines of the summary's results section (before "Additional Stats"):
    (its recommendations, its early-stopping lines)."""
    head = summary_text.split("Additional Stats", 1)[0]
    recommendations: list[str] = []
    early: list[str] = []
    target, prefix = recommendations, ""
    for line in head.splitlines():
        if "Early Stopping Result" in line:
            # "TTFT Early Stopping Result:" -> its bullets say "TTFT early stopping: ...".
            target, prefix = early, line.split("Early Stopping", 1)[0].strip()
            prefix = f"{prefix} early stopping: " if prefix else "early stopping: "
        elif line.strip().startswith("*"):
            target.append(prefix + line.strip().removeprefix("*").strip())
        elif line.strip() and target and line.startswith(" "):
            # A bullet LoadGen wrapped onto the next line.
            target[-1] = f"{target[-1]} {line.strip()}"
    return recommendations, early


def _first(detail: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if isinstance(detail.get(key), int | float):
            return float(detail[key])
    return None


def loadgen_verdict(logs: dict[str, str]) -> dict[str, Any]:
    """{"validity", "reasons", "early_stopping", "figures", "errors", "warnings"} from
    LoadGen's two logs; an INVALID run's reasons include early stopping's when it failed."""
    summary_text = logs.get("mlperf_log_summary.txt", "")
    summary = parse_summary(summary_text)
    detail = parse_detail(logs.get("mlperf_log_detail.txt", ""))
    validity = str(detail.get("result_validity") or summary.get("Result is") or "MISSING")
    reasons, early_stopping = _bullets(summary_text)
    # LoadGen's invalid reason joins its recommendations with " * ": only what is new.
    invalid = str(detail.get("result_invalid_reason") or "")
    for part in (p.strip() for p in invalid.split("*")):
        if part and part not in reasons:
            reasons.append(part)
    if validity == "INVALID" and summary.get("Early stopping satisfied") == "NO":
        reasons += early_stopping
    if validity == "MISSING":
        reasons.append("LoadGen wrote no result: its logs are missing")
    figures: dict[str, float | None] = {
        name: (detail[key] / 1e6 if isinstance(detail.get(key), int | float) else None)
        for name, key in _LATENCY_KEYS.items()
    }
    figures["output_tokens_per_s"] = _first(detail, _TOKEN_RATE_KEYS)
    figures["requests_per_s"] = _first(detail, _REQUEST_RATE_KEYS)
    return {
        "validity": validity,
        "reasons": reasons,
        "early_stopping": early_stopping,
        "figures": figures,
        "errors": list(detail.get("errors", [])),
        "warnings": list(detail.get("warnings", [])),
    }
