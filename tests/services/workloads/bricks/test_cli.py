"""`benchstack bricks` as a user types it: generate, run, construct (with --measure), and
a second model made of bricks already measured constructs without running any."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.inference.host_slot import HostSlot
from tests.support.cli import TINY, piped

FAST = ["--queries", "5", "--min-duration", "0.01", "--threads", "1"]


def test_generate_run_construct(tmp_path: Path) -> None:
    suite = str(tmp_path / "suite")
    generated = piped(tmp_path, "bricks", "generate", TINY, "-H", "2", "--suite", suite)
    assert generated.returncode == 0, generated.stderr
    assert "new brick(s) written" in generated.stdout and "stays with you" in generated.stdout

    ran = piped(tmp_path, "bricks", "run", suite, *FAST)
    assert ran.returncode == 0, ran.stderr
    assert "measured now" in ran.stdout

    built = piped(tmp_path, "bricks", "construct", TINY, "--suite", suite, "--measure", *FAST)
    assert built.returncode == 0, built.stderr
    assert "no new brick ran" in built.stdout
    assert "Constructed / measured" in built.stdout and "Constructed latency" in built.stdout
    assert "…" not in built.stdout  # figures fold, never cut


def test_a_model_without_measured_bricks_says_what_to_run(tmp_path: Path) -> None:
    suite = str(tmp_path / "suite")
    assert piped(tmp_path, "bricks", "generate", TINY, "--suite", suite).returncode == 0
    built = piped(tmp_path, "bricks", "construct", TINY, "--suite", suite)
    assert built.returncode == 0, built.stderr
    assert "not measured on this system" in built.stdout
    assert "benchstack bricks run" in built.stdout


def test_bad_options_name_the_option(tmp_path: Path) -> None:
    result = piped(tmp_path, "bricks", "generate", TINY, "-H", "0", "--suite", str(tmp_path))
    assert result.returncode != 0
    assert "granularity: 0 is not accepted; accepted: 1..64" in result.stderr
    missing = piped(tmp_path, "bricks", "construct", "resnet18", "--suite", str(tmp_path))
    assert missing.returncode != 0 and "no recipe for 'resnet18'" in missing.stderr


def test_an_onnx_file_generates_runs_and_constructs(tmp_path: Path) -> None:
    import onnx

    from tests.services.workloads.bricks.onnx_models import branchy_model

    model = tmp_path / "branchy.onnx"
    onnx.save(branchy_model(), str(model))
    suite = str(tmp_path / "suite")
    generated = piped(
        tmp_path, "bricks", "generate", str(model), "--granularity", "2", "--output", suite
    )
    assert generated.returncode == 0, generated.stderr
    assert "7 layers, 4 sequences" in generated.stdout
    ran = piped(tmp_path, "bricks", "run", suite, *FAST)
    assert ran.returncode == 0, ran.stderr
    assert "onnxruntime" in ran.stdout and "measured now 4" in ran.stdout
    built = piped(tmp_path, "bricks", "construct", str(model), "--suite", suite, "--measure", *FAST)
    assert built.returncode == 0, built.stderr
    assert "no new brick ran" in built.stdout and "Constructed / measured" in built.stdout
    sized = piped(
        tmp_path, "bricks", "generate", str(model), "--image-size", "64", "--suite", suite
    )
    assert sized.returncode != 0 and "image-size: 64 is not accepted" in sized.stderr


def test_models_outside_the_catalogue_construct_by_their_recipe_name(tmp_path: Path) -> None:
    # googlenet and regnet_x_400mf are torchvision models the catalogue does not ship: the
    # suite's recipes are enough to construct them by name, and to measure them again
    # (each recipe keeps how the model was named to generate).
    suite = str(tmp_path / "suite")
    shape = ["--image-size", "32"]
    models = ["torchvision:googlenet", "torchvision:regnet_x_400mf"]
    generated = piped(tmp_path, "bricks", "generate", *models, "-H", "64", *shape, "--suite", suite)
    assert generated.returncode == 0, generated.stderr
    assert piped(tmp_path, "bricks", "run", suite, *FAST).returncode == 0
    built = piped(
        tmp_path,
        "bricks",
        "construct",
        "googlenet",
        "regnet_x_400mf",
        "--suite",
        suite,
        "--measure",
        *shape,
        *FAST,
    )
    assert built.returncode == 0, built.stderr
    assert "googlenet: all" in built.stdout and "regnet_x_400mf: all" in built.stdout
    # Every mean says over which models; one with no calibration names each one left out.
    assert "seq:" in built.stdout and "over 2 of 2 models" in built.stdout
    # `bricks run` counted each brick's weights and measured the memory read: the
    # cold-weights construction has a figure for both.
    assert re.search(r"cold: [0-9.]+ over 2 of 2 models", built.stdout), built.stdout
    assert "calib: - over 0 of 2 models; left out: googlenet (no calibration" in built.stdout
    unknown = piped(tmp_path, "bricks", "construct", "alexnet", "--suite", suite)
    assert unknown.returncode != 0
    assert "no recipe for 'alexnet'" in unknown.stderr and "googlenet" in unknown.stderr


def test_run_waits_for_the_host_and_keeps_its_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another measurement holds the host: `bricks run` waits for it, as `bench` does, and
    # keeps how long it waited and how busy the host was with its figures.
    slot_dir = tmp_path / "host"
    monkeypatch.setenv("BENCHSTACK_HOST_SLOT_DIR", str(slot_dir))
    suite = tmp_path / "suite"
    assert (
        piped(tmp_path, "bricks", "generate", TINY, "-H", "4", "--suite", str(suite)).returncode
        == 0
    )
    env = {**os.environ, "BENCHSTACK_DATA_DIR": str(tmp_path)}
    env.pop("COLUMNS", None)
    with HostSlot(slot_dir).measuring("someone-else"):
        child = subprocess.Popen(
            [sys.executable, "-m", "services.cli.main", "bricks", "run", str(suite), *FAST],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        _wait_until_it_opens(child.pid, slot_dir / "measure.lock")
        time.sleep(0.5)  # it now waits for the lock this test holds
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err
    assert "waited" in out and "for the host" in out and "host:" in out
    (results,) = (suite / "results").glob("*.json")
    (run,) = json.loads(results.read_text())["runs"]
    assert run["host"]["exclusive"] is True and run["host"]["waited_for_host_s"] >= 0.5
    assert run["host"]["load"]["wall_s"] > 0 and "busy" in run["host"]
    figures = json.loads(results.read_text())["bricks"].values()
    assert figures and all("host_load" in t and "busy" in t for t in figures)


def _wait_until_it_opens(pid: int, path: Path, timeout_s: float = 120.0) -> None:
    """Until process ``pid`` holds ``path`` open (it opens the lock file before it asks
    for the lock): then it is waiting for the host, not still starting."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            with contextlib.suppress(OSError):
                if Path(os.readlink(fd)) == path:
                    return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never opened {path}")


def test_measure_runs_the_model_with_the_threads_its_bricks_ran_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No --threads: the bricks run with torch's default count (their system key says so),
    # and --measure runs the whole model with that count, not one `bench` picks for the
    # load. One thread by default, where `bench` would pick every free CPU for SingleStream.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    suite = str(tmp_path / "suite")
    quick = ["--queries", "5", "--min-duration", "0.01"]
    assert piped(tmp_path, "bricks", "generate", TINY, "-H", "2", "--suite", suite).returncode == 0
    ran = piped(tmp_path, "bricks", "run", suite, *quick)
    assert ran.returncode == 0, ran.stderr
    built = piped(tmp_path, "bricks", "construct", TINY, "--suite", suite, "--measure", *quick)
    assert built.returncode == 0, built.stderr
    listed = piped(tmp_path, "results", "--json")
    (run,) = json.loads(listed.stdout)
    shown = json.loads(piped(tmp_path, "show", run["run_id"], "--json").stdout)
    default = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert f"-t{default}-" in ran.stdout
    assert shown["settings"]["backend_options"]["intra_op_threads"] == int(default)
