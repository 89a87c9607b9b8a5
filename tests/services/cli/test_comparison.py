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
