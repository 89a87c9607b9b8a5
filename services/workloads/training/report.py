"""Write a training result as a JSON report under the data folder."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from services.workloads.training.throughput import TrainingResult, TrainingSettings

if TYPE_CHECKING:
    from services.workloads.training.scaling import ScalingPoint


def write_report(result: TrainingResult, data_dir: Path) -> Path:
    folder = data_dir / "training"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = folder / f"{result.settings.model}-{stamp}-{time.time_ns() % 1_000_000}.json"
    path.write_text(json.dumps(result.as_dict(), indent=2))
    return path


def write_scaling_report(
    settings: TrainingSettings, points: list[ScalingPoint], data_dir: Path
) -> Path:
    from dataclasses import asdict

    folder = data_dir / "training"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = folder / f"{settings.model}-scaling-{stamp}-{time.time_ns() % 1_000_000}.json"
    single = points[0]
    path.write_text(
        json.dumps(
            {
                "settings": asdict(settings),
                "points": [
                    {
                        **point.as_dict(),
                        "speedup": point.speedup(single),
                        "efficiency": point.efficiency(single),
                    }
                    for point in points
                ],
                "definitions": {
                    "images_per_s": "workers x batch size / rank 0's step time (mean of steps)",
                    "speedup": "images/s(N) / images/s(first count)",
                    "efficiency": "speedup / (N / first count)",
                },
            },
            indent=2,
        )
    )
    return path
