"""`benchstack compare` on a training fan-out: rows built from stored training runs show
images/s with its 95 % interval and the settings that differ, no LoadGen columns, and a
pair verdict only where neither host was busy."""

from __future__ import annotations

import io
from dataclasses import asdict
from typing import Any

from rich.console import Console

from services.api.fan_out import build_row
from services.cli.comparison import comparison_table, differing_settings, pair_verdicts
from services.workloads.training.step_timing import summarise
from shared.db.evaluations import Evaluation
from shared.db.models import Run


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def training_row(index: int, steps: list[float], image_size: int, busy: bool) -> dict[str, Any]:
    """One row as `compare` receives it: the API's row of a stored training run."""
    statistics = summarise(steps, [0.0] * len(steps), batch_size=2).as_dict()
    document = {
        "settings": {"model": "resnet18", "image_size": image_size, "steps": len(steps)},
        "statistics": statistics,
        "host": {"busy": busy, "overlapped": False},
    }
    evaluation = Evaluation(
        id=f"e{index}", state="SUCCEEDED", reason="", agent_id=f"agent-{index}",
        framework="torch", device="cpu", workload="training", constraints={},
    )  # fmt: skip
    run = Run(
        id=f"r{index}", report={"kind": "training", "training": document, "host": document["host"]},
        metrics=[], environment={"hostname": f"host-{index}"}, framework_version="2.4",
        samples_per_second=statistics["images_per_s"], validity="MEASURED",
    )  # fmt: skip
    return {camel(k): v for k, v in asdict(build_row(evaluation, run, None)).items()}


FAST = [0.020, 0.021, 0.022, 0.020, 0.021]
SLOW = [0.200, 0.210, 0.205, 0.202, 0.208]


def rendered(comparison: dict[str, Any]) -> str:
    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(comparison_table(comparison))
    return out.getvalue()


def test_a_training_comparison_shows_images_per_second_intervals_and_differing_settings() -> None:
    rows = [training_row(0, FAST, 64, False), training_row(1, SLOW, 224, False)]
    assert rows[0]["workload"] == "training" and rows[0]["samplesPerSecondLow"] is not None
    comparison = {"id": "g", "model": "resnet18:1", "scenario": "training", "rows": rows}
    assert differing_settings(rows) == ["image_size"]
    text = rendered(comparison)
    assert "images/s [95 %]" in text and "image_size=64" in text and "image_size=224" in text
    assert "p99" not in text
    low, high = rows[0]["samplesPerSecondLow"], rows[0]["samplesPerSecondHigh"]
    assert f"[{low:.1f}, {high:.1f}]" in text
    (verdict,) = pair_verdicts(comparison)
    assert verdict["figure"] == "images/s" and verdict["verdict"] == "differ"


def test_a_busy_host_gets_no_verdict_and_says_why() -> None:
    rows = [training_row(0, FAST, 64, True), training_row(1, SLOW, 224, False)]
    comparison = {"id": "g", "model": "resnet18:1", "scenario": "training", "rows": rows}
    (verdict,) = pair_verdicts(comparison)
    assert verdict["verdict"] == "cannot say" and "BUSY" in verdict["why"]
    assert "BUSY" in rendered(comparison)


def loadgen_row(agent: str, samples_per_second: float) -> dict[str, Any]:
    """A finished LoadGen row as the API sends it, on a machine with a long CPU name."""
    from services.api.fan_out import FanOutRow

    row = FanOutRow(
        evaluation_id="e", state="SUCCEEDED", reason="", agent_id=agent, hostname="h",
        machine=agent, cpu_model="Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz", arch="x86_64",
        logical_cores=16, memory_gib=128.0, gpus=[], gpu_driver="", framework="onnxruntime",
        framework_version="1.17.1", device="cpu", threads=4, run_id="r",
        samples_per_second=samples_per_second, latency_p50_ms=1.5, latency_p90_ms=2.0,
        latency_p99_ms=3.25, validity="VALID", stability="STABLE",
        samples_per_second_low=samples_per_second - 1,
        samples_per_second_high=samples_per_second + 1, latency_p99_low_ms=3.0,
        latency_p99_high_ms=3.5,
    )  # fmt: skip
    return {camel(k): v for k, v in asdict(row).items()}


def test_at_80_columns_agents_stay_whole_and_what_is_left_out_is_named() -> None:
    agents = ["vm/instance-large-1", "vm/instance-large-2"]
    comparison = {
        "id": "g",
        "model": "resnet50:1",
        "scenario": "SingleStream",
        "rows": [loadgen_row(agents[0], 120.0), loadgen_row(agents[1], 80.0)],
    }
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(comparison_table(comparison, 80))
    text = out.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "…" not in text, text  # rich's mark for a cut cell
    for agent in agents:  # each on one line, whole
        assert any(agent in line for line in text.splitlines()), text
    # The figures and their verdict stay; the least important columns are named.
    assert "samples/s" in text and "p99 ms" in text and "STABLE" in text
    left_out = "left out at 80 columns: framework, threads, p50 ms, p90 ms"
    assert left_out in " ".join(text.split()), text
    assert "left out" not in rendered(comparison)  # at 250 columns nothing is
