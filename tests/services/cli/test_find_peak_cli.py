"""`benchstack find-peak` as a user types it: no peak is printed from probes nobody judged."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import benchstack

# 10 ms per query on two workers (200/s at most); 60 and 120/s stay well within a 100 ms
# p99, but 1 s at those rates is 60-120 samples, far below the 500 the stability rule
# judges a Server run from: both probes meet the bound and neither may be the peak.
SHORT_PROBES = (
    "find-peak", "tests/fixtures/tiny_cnn.yaml", "-f", "null", "-o", "service_time_ms=10",
    "--workers", "2", "--samples", "16", "--latency-bound-ms", "100", "--duration", "1",
    "--start-qps", "60", "--max-probes", "2",
)  # fmt: skip


def test_short_probes_print_no_valid_peak_with_the_reason_and_a_duration(data_dir: Path) -> None:
    result = benchstack(data_dir, *SHORT_PROBES)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "no valid peak" in lines
    assert not any(line.startswith("peak:") for line in lines)
    why = next(line for line in lines if line.startswith("why: "))
    assert "2 probes met the bound, none judged" in why and "stability INSUFFICIENT" in why
    advice = [line.strip() for line in lines if line.startswith("  try ")]
    assert advice[0].startswith("try --duration ")
    # The curve names each probe's verdicts.
    rows = [line for line in lines if "within bound, not judged" in line]
    assert len(rows) == 2 and all("INSUFFICIENT" in row for row in rows)


def test_json_carries_the_same_verdict_reason_and_advice(data_dir: Path) -> None:
    result = benchstack(data_dir, *SHORT_PROBES, "--json")
    assert result.returncode == 1, result.stderr
    payload = json.loads(result.stdout)
    assert payload["verdict"] == "no valid peak" and payload["peak"] is None
    assert payload["within_bound"]["qps"] == 120
    assert payload["reason"].startswith("2 probes met the bound, none judged")
    assert payload["advice"][0].startswith("--duration ")
    assert [(p["qps"], p["passed"], p["judged"]) for p in payload["curve"]] == [
        (60, True, False),
        (120, True, False),
    ]
    assert all(p["stability"] == "INSUFFICIENT" for p in payload["curve"])
