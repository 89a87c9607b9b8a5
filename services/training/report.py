"""Write a training result as a JSON report under the data folder."""

from __future__ import annotations

import json
import time
from pathlib import Path

from services.training.throughput import TrainingResult


def write_report(result: TrainingResult, data_dir: Path) -> Path:
    folder = data_dir / "training"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = folder / f"{result.settings.model}-{stamp}-{time.time_ns() % 1_000_000}.json"
    path.write_text(json.dumps(result.as_dict(), indent=2))
    return path
