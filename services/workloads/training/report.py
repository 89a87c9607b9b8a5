"""Write a `benchstack train` session (session.SessionReport) as one JSON report under the
data folder: ``<data dir>/training/<model>-<UTC stamp>-<n>.json``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from services.workloads.training.session import SessionReport


def write_session_report(report: SessionReport, data_dir: Path) -> Path:
    folder = data_dir / "training"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    scaling = "-scaling" if any(arm.workers is not None for arm in report.arms) else ""
    name = f"{report.settings.model}{scaling}-{stamp}-{time.time_ns() % 1_000_000}.json"
    path = folder / name
    path.write_text(json.dumps(report.as_dict(), indent=2))
    return path
