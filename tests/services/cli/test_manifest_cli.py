"""`benchstack manifest validate` refuses what `benchstack bench` refuses, in the same words."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import benchstack

TINY = Path("tests/fixtures/tiny_cnn.yaml")


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def write_manifest(folder: Path, **changes: Any) -> Path:
    data = yaml.safe_load(TINY.read_text())
    data.update(changes)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def outside_file(tmp_path: Path) -> Path:
    """A file next to the manifest's folder, standing in for /etc/passwd."""
    path = tmp_path / "passwd"
    path.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    return path


def test_validate_refuses_a_path_out_of_the_folder_without_hashing_it(
    data_dir: Path, tmp_path: Path, outside_file: Path
) -> None:
    folder = tmp_path / "a" / "b"
    written = "../../passwd"
    assert (folder / written).resolve() == outside_file
    source = {
        "architecture": "benchstack:digits_cnn",
        "weights": {"path": written, "sha256": "0" * 64},
    }
    path = write_manifest(folder, source=source)
    (line,) = error_lines(benchstack(data_dir, "manifest", "validate", str(path)))
    assert f"source.weights.path: {written!r} is not accepted" in line
    assert "accepted: a path relative to the manifest's folder" in line
    assert hashlib.sha256(outside_file.read_bytes()).hexdigest() not in line

    bench = error_lines(benchstack(data_dir, "bench", str(path), "--duration", "0.2"))
    assert [line.partition("source.")[2] for line in bench] == [line.partition("source.")[2]]


def test_validate_and_bench_refuse_a_shape_the_steps_do_not_produce(
    data_dir: Path, tmp_path: Path
) -> None:
    data = yaml.safe_load(TINY.read_text())
    data["inputs"][0]["shape"] = [32, 32, 1]  # the steps end with layout NCHW
    path = write_manifest(tmp_path, inputs=data["inputs"])
    expected = (
        "inputs[0].shape: the steps produce (1, 32, 32) per sample, the manifest says (32, 32, 1)"
    )
    (line,) = error_lines(benchstack(data_dir, "manifest", "validate", str(path)))
    assert expected in line
    (bench_line,) = error_lines(
        benchstack(data_dir, "bench", str(path), "--duration", "0.2", "--samples", "4")
    )
    assert expected in bench_line


def test_validate_names_an_unknown_architecture(data_dir: Path, tmp_path: Path) -> None:
    path = write_manifest(tmp_path, source={"architecture": "benchstack:digits"})
    (line,) = error_lines(benchstack(data_dir, "manifest", "validate", str(path)))
    assert "source.architecture: benchstack has no model 'digits'" in line
    assert "did you mean digits_cnn" in line
