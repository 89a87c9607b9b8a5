"""Image bombs: what the steps would make of an image is refused from its header, before
any pixel is decoded, so a 200-byte file never asks for gigabytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from services.core.catalogue import resolve_model
from services.core.manifest_sections import FIDELITIES, CenterCropStep, ResizeStep
from services.preprocess.datasets import Sample
from services.preprocess.pipeline import NoSamplePrepared, preprocess
from services.preprocess.sizes import OutputBounds, largest_output
from shared.memory_limit import error_text
from shared.settings import get_settings

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def png(folder: Path, width: int, height: int) -> Sample:
    path = folder / f"{width}x{height}.png"
    Image.fromarray(np.zeros((height, width, 3), np.uint8)).save(path)
    return Sample(id=path.name, path=path, label=None)


def test_the_largest_output_follows_the_steps_from_the_header_size() -> None:
    steps = (ResizeStep(op="resize", size=256), CenterCropStep(op="center_crop", size=224))
    assert largest_output(steps, 1, 60_000) == ("resize to 256", (256, 15_360_000))
    assert largest_output(steps, 375, 500) == ("resize to 256", (256, 341))
    assert largest_output((), 10, 20) == (None, (10, 20))


def test_a_normal_photo_is_within_bounds() -> None:
    spec = resolve_model("resnet18").inputs[0]
    assert OutputBounds.of(spec, get_settings()).problem(500, 375) is None


@pytest.mark.parametrize("size", [(1, 60_000), (60_000, 1)])
def test_a_long_thin_png_is_a_named_per_sample_error(tmp_path: Path, size: tuple[int, int]) -> None:
    bomb = png(tmp_path, *size)
    good = png(tmp_path, 300, 200)
    assert bomb.path.stat().st_size < 1000
    for fidelity in FIDELITIES:
        spec = resolve_model("resnet18").inputs[0].model_copy(update={"fidelity": fidelity})
        prepared = preprocess([bomb, good], spec)
        assert prepared.ids == [good.id]
        (error,) = prepared.errors
        assert str(error) == (
            f"{bomb.id}: image of {size[0]}x{size[1]} pixels is 60000 times as long as it is "
            "wide; accepted: at most 100 times (BENCHSTACK_MAX_ASPECT_RATIO)"
        )


def test_the_output_budget_names_the_step_and_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSTACK_MAX_ASPECT_RATIO", "1000000")
    get_settings.cache_clear()
    bomb = png(tmp_path, 1, 60_000)
    with pytest.raises(NoSamplePrepared) as info:
        preprocess([bomb], resolve_model("resnet18").inputs[0])
    assert str(info.value) == (
        "dataset: none of the 1 samples could be prepared: 1x60000.png: image of 1x60000 "
        "pixels would be 256x15360000 after resize to 256 (3932160000 pixels); accepted: at "
        "most 16777216 pixels after any step (BENCHSTACK_MAX_OUTPUT_PIXELS)"
    )


# Run in a process of its own, so its peak resident memory is the bombs' alone; under an
# address-space limit, so a regression fails this test rather than the machine.
BOMBS_SCRIPT = """
import json, sys, time
from pathlib import Path
import numpy as np
from PIL import Image
import torch  # what the fast mode imports, before the limit is taken
from services.preprocess.datasets import Sample
from services.preprocess.pipeline import NoSamplePrepared, preprocess
from services.core.catalogue import resolve_model
from shared.memory_limit import limit_memory

limit_memory(2 * 2**30, setting="the test's limit")
folder = Path(sys.argv[1])
reasons = []
start = time.monotonic()
for width, height in [(1, 60000), (60000, 1), (2, 80000)]:
    path = folder / f"{width}x{height}.png"
    Image.fromarray(np.zeros((height, width, 3), np.uint8)).save(path)
    for fidelity in ("reference", "fast"):
        spec = resolve_model("resnet18").inputs[0].model_copy(update={"fidelity": fidelity})
        try:
            preprocess([Sample(id=path.name, path=path, label=None)], spec)
        except NoSamplePrepared as exc:
            reasons.append(str(exc))
# VmHWM, not ru_maxrss: the latter is kept across exec, so it counts the pages this
# process shared with the test process it was forked from (gigabytes, late in a suite).
status = Path("/proc/self/status").read_text().splitlines()
rss_mb = int(next(line for line in status if line.startswith("VmHWM")).split()[1]) / 1024
print(json.dumps({"reasons": reasons, "rss_mb": rss_mb, "s": time.monotonic() - start}))
"""


def test_bombs_allocate_no_gigabytes(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(BOMBS_SCRIPT), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert len(result["reasons"]) == 6
    for reason in result["reasons"]:
        assert "BENCHSTACK_MAX_ASPECT_RATIO" in reason, reason
    # torch's import is most of it; the 1x60000 resize alone asked for 12 GB
    assert result["rss_mb"] < 700, result
    assert result["s"] < 30, result  # refused from the header: well under a second alone


def test_an_error_never_reads_empty() -> None:
    assert error_text(MemoryError(), "decoding the image") == (
        "ran out of memory while decoding the image (MemoryError)"
    )
    assert error_text(KeyError(), "decoding the image") == "KeyError while decoding the image"
    assert error_text(ValueError("bad header"), "decoding the image") == "bad header"
