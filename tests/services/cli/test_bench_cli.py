"""The `benchstack` command as a user runs it: a real subprocess, real LoadGen, real SQLite."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from services.cli.render import report_table
from services.core.loadgen_logs import parse_summary
from services.inference.profiling.trace_events import trace_problems
from tests.support.cli import benchstack

TINY = "tests/fixtures/tiny_cnn.yaml"


def bench_json(data_dir: Path, *args: str) -> dict[str, Any]:
    result = benchstack(data_dir, "bench", *args, "--json")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_single_stream_report_equals_loadgen_summary(data_dir: Path) -> None:
    report = bench_json(
        data_dir, "resnet18", "--scenario", "single-stream", "--duration", "2", "--samples", "8"
    )
    summary = parse_summary(Path(report["logs"]["mlperf_log_summary.txt"]).read_text())
    perf = report["performance"]
    assert perf["latency"]["percentiles_ns"]["p90"] == summary["90.00 percentile latency (ns)"]
    assert perf["headline"]["value"] == summary["90.0th percentile latency (ns)"]
    assert perf["qps"] == summary["QPS w/ loadgen overhead"]
    assert perf["validity"]["result"] == summary["Result is"]
    env = report["environment"]
    assert env["cpu"]["logical_cores"] >= 1 and env["frameworks"]["torch"]
    assert report["framework"]["name"] == "torch"


@pytest.mark.parametrize("framework", ["torch", "null"])
def test_offline_prints_samples_per_second(data_dir: Path, framework: str) -> None:
    result = benchstack(
        data_dir,
        "bench",
        TINY,
        "--framework",
        framework,
        "--scenario",
        "offline",
        "--duration",
        "0.5",
        "--samples",
        "16",
        "--batch-size",
        "4",
    )
    assert result.returncode == 0, result.stderr
    assert "samples/s" in result.stdout
    assert "│ validity" in result.stdout and "INVALID" not in result.stdout


@pytest.mark.parametrize("scenario", ["server", "multi-stream"])
def test_server_and_multistream_run(data_dir: Path, scenario: str) -> None:
    report = bench_json(
        data_dir,
        TINY,
        "--scenario",
        scenario,
        "--duration",
        "0.5",
        "--samples",
        "16",
        "--target-qps",
        "50",
        "--samples-per-query",
        "4",
        "--batch-size",
        "2",
    )
    assert (
        report["performance"]["scenario"]
        == {"server": "Server", "multi-stream": "MultiStream"}[scenario]
    )
    assert report["performance"]["samples_per_second"] > 0


def test_runs_are_stored_listed_and_shown(data_dir: Path) -> None:
    first = bench_json(data_dir, TINY, "--duration", "0.3", "--samples", "8")
    second = bench_json(data_dir, TINY, "--duration", "0.3", "--samples", "8")
    assert not first["preprocessing"]["reused"]
    assert second["preprocessing"]["reused"]  # same files, same steps: the shard is reused
    # 8 small images are not worth a pool; a reused shard was prepared by no process.
    assert first["preprocessing"]["samples"] == 8 and first["preprocessing"]["processes"] == 1
    assert second["preprocessing"]["processes"] is None
    listed = json.loads(benchstack(data_dir, "results", "--json").stdout)
    assert {r["run_id"] for r in listed} == {first["run_id"], second["run_id"]}
    shown = benchstack(data_dir, "show", first["run_id"][:8], "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["performance"] == first["performance"]
    assert (data_dir / "benchstack.db").exists()
    missing = benchstack(data_dir, "show", "ffffffff")
    assert missing.returncode == 1 and "no run matches" in missing.stderr


def test_preprocessing_fast_prepares_its_own_shard_and_says_so(data_dir: Path) -> None:
    reference = bench_json(data_dir, TINY, "--duration", "0.3", "--samples", "8")
    fast = bench_json(
        data_dir, TINY, "--duration", "0.3", "--samples", "8", "--preprocessing", "fast"
    )
    assert reference["preprocessing"]["fidelity"] == "reference"
    assert fast["preprocessing"]["fidelity"] == "fast"
    # A CPU run decodes on the CPU (a CUDA run in the fast mode would say nvjpeg).
    assert fast["preprocessing"]["decoder"] == reference["preprocessing"]["decoder"] == "cpu"
    # Another input spec, another shard: the reference one is not reused for it.
    assert not fast["preprocessing"]["reused"]
    assert fast["preprocessing"]["shard"] != reference["preprocessing"]["shard"]
    shown = benchstack(data_dir, "show", fast["run_id"][:8])
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if "preprocessing" in line)
    seconds = fast["preprocessing"]["seconds"]
    assert f"fast, {seconds:.2f} s ({8 / seconds:,.0f} images/s, 1 process)" in row
    # The same run as a CUDA run's report would say it: the decoder is named.
    on_gpu = {**fast, "preprocessing": {**fast["preprocessing"], "decoder": "nvjpeg (cuda:0)"}}
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(report_table(on_gpu))
    assert "fast, decoded by nvjpeg (cuda:0), " in console.export_text()


def _one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    for word in words:
        assert word in lines[0], lines[0]


def _write_manifest(tmp_path: Path, change: dict[str, Any]) -> Path:
    data = yaml.safe_load(Path(TINY).read_text())
    data.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"name": None}, ("name:",)),
        ({"version": "1.x"}, ("version:", "semantic version")),
        ({"framework": {"name": "caffe2"}}, ("framework.name:", "torch, triton")),
        ({"inputs": "image"}, ("inputs:", "list")),
        (
            {"inputs": [{"shape": [1, 32, 32], "steps": [{"decode": {}}, {"blur": {}}]}]},
            ("inputs[0].steps[1]:", "unknown step 'blur'", "accepted"),
        ),
    ],
)
def test_manifest_validate_errors_are_one_line(
    data_dir: Path, tmp_path: Path, change: dict[str, Any], words: tuple[str, ...]
) -> None:
    path = _write_manifest(tmp_path, change)
    if change.get("name", "x") is None:
        text = yaml.safe_load(path.read_text())
        del text["name"]
        path.write_text(yaml.safe_dump(text))
    _one_line_error(benchstack(data_dir, "manifest", "validate", str(path)), *words)


def test_sha256_mismatch_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "weights.pt").write_bytes(b"not the weights you are looking for")
    wrong = hashlib.sha256(b"other").hexdigest()
    path = _write_manifest(
        tmp_path,
        {
            "source": {
                "architecture": "benchstack:digits_cnn",
                "weights": {"path": "weights.pt", "sha256": wrong},
            }
        },
    )
    _one_line_error(
        benchstack(data_dir, "manifest", "validate", str(path)), "source.weights.sha256: mismatch"
    )
    _one_line_error(
        benchstack(data_dir, "bench", str(path), "--duration", "0.2"),
        "source.weights.sha256: mismatch",
    )


def test_catalogue_validates(data_dir: Path) -> None:
    files = sorted(str(p) for p in Path("services/core/catalogue").glob("*.yaml"))
    result = benchstack(data_dir, "manifest", "validate", *files)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ok ") == len(files)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--framework", "caffe"), ("framework:", "unknown backend 'caffe'", "accepted")),
        (("--scenario", "batch"), ("--scenario:", "accepted: offline")),
        (("--target-qps", "-3"), ("--target-qps:", "greater than 0")),
        (("--dataset", "/no/such/folder"), ("dataset:", "not a folder")),
        (("--device", "gpu"), ("device: 'gpu' is not accepted", "cpu, cuda, cuda:<index>")),
    ],
)
def test_bench_bad_input_is_one_line(
    data_dir: Path, args: tuple[str, ...], words: tuple[str, ...]
) -> None:
    _one_line_error(benchstack(data_dir, "bench", TINY, "--duration", "0.2", *args), *words)


def test_unknown_model_is_one_line(data_dir: Path) -> None:
    _one_line_error(
        benchstack(data_dir, "bench", "resnet19"), "model: 'resnet19' is not in the catalogue"
    )


def test_model_rejecting_its_input_is_one_line(data_dir: Path, tmp_path: Path) -> None:
    data = yaml.safe_load(Path(TINY).read_text())
    data["inputs"][0]["shape"] = [1, 16, 16]  # the CNN's classifier expects 32x32
    data["inputs"][0]["steps"][1] = {"resize": {"size": [16, 16], "keep_aspect": False}}
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data))
    _one_line_error(
        benchstack(data_dir, "bench", str(path), "--duration", "0.2", "--samples", "4"),
        "inputs[0].shape: the model rejects a batch of shape (1, 1, 16, 16)",
    )


def test_bench_trace_level_profiles_after_the_uninstrumented_run(data_dir: Path) -> None:
    report = bench_json(
        data_dir, TINY, "--scenario", "single-stream", "--duration", "1", "--samples", "4",
        "--trace-level", "framework", "--profile-iterations", "3",
    )  # fmt: skip
    assert report["settings"]["trace_level"] == "FRAMEWORK"
    profile = report["profile"]
    assert [p["level"] for p in profile["passes"]] == ["NONE", "MODEL", "FRAMEWORK"]
    assert profile["layers"] and profile["coverage"]["level"] == "FRAMEWORK"
    trace = json.loads(Path(report["logs"]["trace.json"]).read_text())
    assert trace_problems(trace) == []
    steps = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "step"}
    assert {"dataset", "preprocess", "model load", "loadgen run", "profiling passes"} <= steps


def test_bench_without_a_trace_level_profiles_nothing(data_dir: Path) -> None:
    report = bench_json(
        data_dir, TINY, "--scenario", "single-stream", "--duration", "1", "--samples", "4"
    )
    assert report["profile"] is None and "trace.json" not in report["logs"]
