"""`benchstack profile` as a user runs it: a real subprocess, real torch and ONNX Runtime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.inference.profiling.trace_events import trace_problems
from tests.services.cli.test_bench_cli import TINY, benchstack


@pytest.mark.parametrize("framework", ["torch", "onnxruntime"])
def test_profile_prints_the_layer_table_and_writes_a_nested_trace(
    data_dir: Path, tmp_path: Path, framework: str
) -> None:
    trace = tmp_path / "trace.json"
    result = benchstack(
        data_dir, "profile", TINY, "-f", framework, "--trace-level", "framework",
        "--iterations", "3", "--trace", str(trace),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for text in ("Top 10 layers", "Time by operator type", "coverage:", "cold start", "NONE"):
        assert text in result.stdout
    document = json.loads(trace.read_text())
    assert trace_problems(document) == []
    categories = {e.get("cat") for e in document["traceEvents"]}
    assert {"step", "pass", "model", "layer"} <= categories


def test_profile_json_names_the_level_of_every_figure(data_dir: Path, tmp_path: Path) -> None:
    result = benchstack(
        data_dir, "profile", TINY, "--trace-level", "model", "--iterations", "2",
        "--trace", str(tmp_path / "t.json"), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    profile = json.loads(result.stdout)["profile"]
    assert profile["headline"]["level"] == "NONE"
    assert [p["level"] for p in profile["passes"]] == ["NONE", "MODEL"]
    assert all(p["iqr_ms"] >= 0 for p in profile["passes"])  # every figure with its spread
    assert profile["layers"] == [] and profile["coverage"] is None
    # It held the host slot and measured the host's load, as bench does.
    host = profile["host"]
    assert host["exclusive"] is True and host["overlapped"] is False
    assert host["load"]["wall_s"] > 0 and host["busy"] in (True, False)
    assert "busy" in host["load"]["reason"] or "quiet" in host["load"]["reason"]


def test_profile_refuses_an_unknown_level_in_one_line(data_dir: Path) -> None:
    result = benchstack(data_dir, "profile", TINY, "--trace-level", "kernels")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: --trace-level: 'kernels' is not a trace level; accepted: NONE, APPLICATION, "
        "MODEL, FRAMEWORK, LIBRARY, SYSTEM, FULL"
    ]
