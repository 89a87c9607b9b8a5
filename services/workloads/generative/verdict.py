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


def _recommendations(summary_text: str) -> list[str]:
    """The ``* ...`` lines of the summary's results section (before "Additional Stats")."""
    head = summary_text.split("Additional Stats", 1)[0]
    return [
        line.strip().removeprefix("*").strip()
        for line in head.splitlines()
        if line.strip().startswith("*")
    ]


def _first(detail: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if isinstance(detail.get(key), int | float):
            return float(detail[key])
    return None


def loadgen_verdict(logs: dict[str, str]) -> dict[str, Any]:
    """{"validity", "reasons", "figures", "errors", "warnings"} from LoadGen's two logs."""
    summary_text = logs.get("mlperf_log_summary.txt", "")
    summary = parse_summary(summary_text)
    detail = parse_detail(logs.get("mlperf_log_detail.txt", ""))
    validity = str(detail.get("result_validity") or summary.get("Result is") or "MISSING")
    reasons = _recommendations(summary_text)
    invalid = str(detail.get("result_invalid_reason") or "").strip()
    if invalid and invalid not in reasons:
        reasons.insert(0, invalid)
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
        "figures": figures,
        "errors": list(detail.get("errors", [])),
        "warnings": list(detail.get("warnings", [])),
    }
