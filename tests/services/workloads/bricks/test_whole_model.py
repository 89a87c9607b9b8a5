"""A whole model measured through `bench`'s own path (run_bench): the host slot, the
backend, LoadGen SingleStream, the host's load, the run stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli.command_kit import bench
from services.workloads.bricks.measure import MeasureSettings
from services.workloads.bricks.whole_model import bench_manifest, measure_whole
from shared.settings import Settings

TINY = "tests/fixtures/tiny_cnn.yaml"


def test_an_architecture_gets_a_manifest_at_the_bricks_image_size() -> None:
    manifest = bench_manifest("torchvision:googlenet", 32)
    assert manifest.name == "googlenet"
    assert manifest.source.architecture == "torchvision:googlenet"
    assert manifest.inputs[0].shape == (3, 32, 32)
    assert bench_manifest("torchvision:regnet_x_400mf").inputs[0].shape == (3, 224, 224)
    # A catalogue or file manifest keeps its own, resized only when asked.
    assert bench_manifest(TINY).inputs[0].shape == (1, 32, 32)
    assert bench_manifest(TINY, 48).inputs[0].shape == (1, 48, 48)


def test_a_model_is_measured_as_bench_measures_it(settings: Settings) -> None:
    timing = measure_whole(
        bench_manifest(TINY, 32), MeasureSettings(20, 0.05, 1), settings, bench=bench
    )
    assert timing.queries >= 20
    assert 0 < timing.median_ms < 1000
    assert 0 < timing.loadgen_s <= timing.seconds
    # The host slot and the load over the run, as `bench` records them.
    assert timing.host["exclusive"] is True
    assert timing.host["load"]["wall_s"] > 0
    assert timing.busy == timing.host["busy"]
    assert timing.run_id


def test_an_image_size_for_a_tensor_input_is_refused(tmp_path: Path) -> None:
    text = Path(TINY).read_text().replace("modality: image", "modality: tensor", 1)
    path = tmp_path / "tensor.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match="image-size: tiny-cnn takes a tensor"):
        bench_manifest(str(path), 32)
