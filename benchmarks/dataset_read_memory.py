"""What the scheduler holds while it plans a dataset with one huge file in it (issue 53).

Each case runs in a fresh process: an embedded-mode data folder, 15 small JPEGs and one
sparse file (a hole: no disk) of the given size in a folder of the datasets folder, one
evaluation submitted on it and planned by the scheduler's own task (which hashes every
file for the shard keys). Prints that process's peak resident memory (VmHWM) with a
1 KiB file and with the large one, and the evaluation's state after planning.

    PYTHONPATH=$PWD python benchmarks/dataset_read_memory.py --gib 3

Target: under 300 MB with a 3 GiB file, the file refused unread (the preprocess workers
name it as that sample's error). Against an older checkout, ``PYTHONPATH=<its root>``
with a smaller ``--gib`` (it reads the file whole).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = """
import io, json, sys
from pathlib import Path
import pytest
from PIL import Image
from services.api.submission_request import Submission
from services.tasks import scheduler as scheduler_tasks
from shared.settings import get_settings
from tests.support.pipeline import evaluation_row, outbox_fixture, submit_request

data_dir, size = Path(sys.argv[1]), int(sys.argv[2])
folder = get_settings().datasets_dir / "photos"
folder.mkdir(parents=True)
for i in range(15):
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (i * 10, 0, 0)).save(buffer, "JPEG")
    (folder / f"{i:02d}.jpg").write_bytes(buffer.getvalue())
with (folder / "zz-huge.jpg").open("wb") as huge:
    huge.truncate(size)
boxes = outbox_fixture(data_dir, pytest.MonkeyPatch())
next(boxes)
request = Submission(
    model="resnet18", framework="null", settings={"minDurationS": 0.2}, dataset="photos",
    samples=16,
)
evaluation = submit_request(request)
scheduler_tasks.plan_evaluation({"evaluation_id": str(evaluation.id)})
lines = Path("/proc/self/status").read_text().splitlines()
peak_kb = int(next(l for l in lines if l.startswith("VmHWM:")).split()[1])
state = evaluation_row(str(evaluation.id)).state
print(json.dumps({"peak_mb": peak_kb / 1024, "state": state}))
"""


def run_case(size: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHSTACK_")}
        env["BENCHSTACK_DATA_DIR"] = str(data_dir)
        done = subprocess.run(
            [sys.executable, "-c", CASE, str(data_dir), str(size)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1:]}
        result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=3.0, help="the large file's size")
    args = parser.parse_args()
    for label, size in (("1 KiB file", 1024), (f"{args.gib:g} GiB file", int(args.gib * 2**30))):
        print(f"{label:>14}: {run_case(size)}")


if __name__ == "__main__":
    main()
