"""`benchstack generative-find-peak` and `generative-sweep` as a user runs them: the tiny
Llama built in the process, 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import benchstack

SHORT = ("--prompts", "4", "--input-tokens", "4", "--output-tokens", "4", "--duration", "0.5")


def test_find_peak_with_bounds_no_rate_meets_says_why(data_dir: Path) -> None:
    result = benchstack(
        data_dir, "generative-find-peak", "--ttft-ms", "0.01", "--tpot-ms", "500",
        "--percentile", "90", "--start-qps", "4", "--max-probes", "2", *SHORT, columns=80,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "TTFT p90 <= 0.01 ms and TPOT p90 <= 500 ms" in result.stdout
    assert "no valid peak" in result.stdout
    assert "none of the 2 probes met" in result.stdout
    assert "try a looser --ttft-ms, above" in result.stdout
    assert "early stopping at p90" in result.stderr  # 0.5 s probes are too short: said
    assert "probe at 4 requests/s for 0.5 s" in result.stderr


def test_a_rate_sweep_as_json_and_a_refused_value(data_dir: Path) -> None:
    result = benchstack(
        data_dir, "generative-sweep", "--parameter", "target_qps", "--values", "3,6",
        "--ttft-ms", "1000", "--tpot-ms", "500", *SHORT, "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    points = found["curve"]["points"]
    assert [p["value"] for p in points] == [3.0, 6.0]
    assert all(p["figures"]["output_tokens_per_s"]["estimate"] > 0 for p in points)
    assert [r["options"]["target_qps"] for r in found["runs"]] == [3.0, 6.0]
    refused = benchstack(
        data_dir, "generative-sweep", "--parameter", "target_qps", "--values", "3",
        "--scenario", "offline",
    )  # fmt: skip
    assert refused.returncode == 1
    assert "--parameter: target_qps is a server setting" in refused.stderr
