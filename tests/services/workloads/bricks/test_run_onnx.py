"""ONNX bricks measured through LoadGen with onnxruntime, under their own system key and
floor, and an ONNX model's latency constructed from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.inference.backends.convert import ConvertedModel
from services.workloads.bricks.construct import construct
from services.workloads.bricks.generate import OnnxModelInput, generate_suite
from services.workloads.bricks.measure import MeasureSettings, system_key
from services.workloads.bricks.models import model_input
from services.workloads.bricks.results import read_results
from services.workloads.bricks.run import run_suite
from services.workloads.bricks.suite import list_bricks, read_recipe
from tests.services.workloads.bricks.onnx_models import branchy_model

QUICK = MeasureSettings(min_queries=5, min_duration_s=0.01, threads=1)


@pytest.mark.parametrize("granularity", [1, 2])
def test_onnx_bricks_are_measured_and_a_model_constructed(
    tiny_onnx: ConvertedModel, tmp_path: Path, granularity: int
) -> None:
    generate_suite([OnnxModelInput("tiny", tiny_onnx.path, 1)], granularity, tmp_path)
    (report,) = run_suite(tmp_path, QUICK)
    assert report.system == system_key(1, "onnx") and "onnxruntime" in report.system
    assert report.measured_now == len(list_bricks(tmp_path)) > 0
    results = read_results(tmp_path, report.system)
    assert results.floor is not None and results.floor["median_ms"] > 0
    built = construct(read_recipe(tmp_path, "tiny"), results)
    assert not built.missing and built.sequential_ms is not None and built.sequential_ms > 0
    assert built.critical_path_ms == pytest.approx(built.sequential_ms)  # a chain
    floor = float(results.floor["median_ms"])
    assert built.floor_corrected_ms == pytest.approx(
        built.sequential_ms - (built.steps - 1) * floor
    )


def test_a_model_of_measured_layers_constructs_without_new_bricks(tmp_path: Path) -> None:
    measured = branchy_model("first", seed=0)
    generate_suite([OnnxModelInput("first", measured, 2)], 1, tmp_path)
    (first,) = run_suite(tmp_path, QUICK)
    assert first.measured_now == first.bricks
    # Same layers, other names and weights: nothing new to write or to measure.
    twin = generate_suite([OnnxModelInput("twin", branchy_model("twin", seed=7), 2)], 1, tmp_path)
    assert twin.new_bricks == 0
    built = construct(read_recipe(tmp_path, "twin"), read_results(tmp_path, first.system))
    assert not built.missing and built.sequential_ms is not None
    assert built.unique_bricks == 6 and built.steps == 7  # the two Relus are one brick
    (again,) = run_suite(tmp_path, QUICK)
    assert (again.measured_now, again.reused) == (0, first.bricks)


def test_each_framework_keeps_its_own_results_and_floor(
    tiny_onnx: ConvertedModel, tmp_path: Path
) -> None:
    generate_suite([model_input("tests/fixtures/tiny_cnn.yaml")], 2, tmp_path)
    generate_suite([OnnxModelInput("tiny-onnx", tiny_onnx.path, 1)], 2, tmp_path)
    torch_report, onnx_report = run_suite(tmp_path, QUICK)
    assert torch_report.system == system_key(1) and onnx_report.system == system_key(1, "onnx")
    assert torch_report.bricks == len(list_bricks(tmp_path, "torch"))
    assert onnx_report.bricks == len(list_bricks(tmp_path, "onnx"))
    for report in (torch_report, onnx_report):
        results = read_results(tmp_path, report.system)
        assert results.floor is not None
        assert set(results.bricks) == set(
            list_bricks(tmp_path, "torch" if report is torch_report else "onnx")
        )


def test_an_unknown_framework_is_named() -> None:
    with pytest.raises(ValueError, match="framework: 'tf'; accepted: torch, onnx"):
        system_key(1, "tf")
