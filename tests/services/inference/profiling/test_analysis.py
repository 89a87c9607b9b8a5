"""The LIBRARY pass's figures on a GPU: kernels keep their own rows, busy time is a union."""

from __future__ import annotations

import pytest

from services.inference.profiling.analysis import busy_ns, gpu_time, layer_table, library_ops
from services.inference.profiling.passes import Profile
from services.inference.profiling.spans import Span


def _span(name: str, category: str, start: int, duration: int, iteration: int) -> Span:
    return Span(name, category, start, duration, args={"pass": "LIBRARY", "iteration": iteration})


def _gpu_profile() -> Profile:
    spans = []
    for iteration, origin in enumerate((0, 10_000)):
        spans += [
            _span("forward", "model", origin, 4_000, iteration),
            # The CPU operator spans its kernels' launches: longer than any kernel.
            _span("aten::conv2d", "library", origin, 3_000, iteration),
            _span("aten::relu", "library", origin + 3_000, 500, iteration),
            _span("Memcpy HtoD (Pageable -> Device)", "gpu", origin + 100, 200, iteration),
            # Two kernels overlapping on two streams: 1000..2000 and 1500..2500.
            _span("void conv_kernel<float>(int, float*)", "gpu", origin + 1_000, 1_000, iteration),
            _span("relu_kernel", "gpu", origin + 1_500, 1_000, iteration),
        ]
    return Profile(level="LIBRARY", iterations=2, spans=spans)


def test_busy_time_counts_overlapping_kernels_once() -> None:
    spans = [_span("a", "gpu", 0, 10, 0), _span("b", "gpu", 5, 10, 0), _span("c", "gpu", 30, 5, 0)]
    assert busy_ns(spans) == 15 + 5
    assert busy_ns([]) == 0


def test_gpu_time_is_the_device_busy_share_of_the_model_time() -> None:
    figures = gpu_time(_gpu_profile())
    assert figures is not None
    # Per iteration: the copy 200 ns and the two kernels' union 1500 ns, of a 4000 ns forward.
    assert figures["busy_ms"] == pytest.approx(1_700 / 1e6)
    assert figures["copy_ms"] == pytest.approx(200 / 1e6)
    assert figures["model_ms"] == pytest.approx(4_000 / 1e6)
    assert figures["busy_share"] == pytest.approx(1_700 / 4_000)
    assert figures["kernels_per_iteration"] == 3


def test_no_gpu_time_without_device_spans() -> None:
    profile = _gpu_profile()
    profile.spans = [s for s in profile.spans if s.category != "gpu"]
    assert gpu_time(profile) is None


def test_kernels_keep_rows_though_cpu_operators_take_longer() -> None:
    rows = library_ops(_gpu_profile())
    kinds = [row["kind"] for row in rows]
    assert kinds.count("library") == 2 and kinds.count("gpu") == 3
    gpu_rows = [row for row in rows if row["kind"] == "gpu"]
    assert gpu_rows[0]["mean_ms"] == pytest.approx(1_000 / 1e6)


def test_operator_rows_carry_calls_total_spread_and_share() -> None:
    profile = _gpu_profile()
    # A second call of relu in iteration 1 only: 1 call per iteration in one, 2 in the other.
    profile.spans.append(_span("aten::relu", "library", 13_600, 300, 1))
    relu = next(row for row in library_ops(profile) if row["name"] == "aten::relu")
    assert relu["calls"] == 1.5
    assert relu["total_ms"] == pytest.approx((500 + 800) / 1e6)
    assert relu["median_ms"] == pytest.approx(650 / 1e6)
    assert relu["iqr_ms"] == pytest.approx(150 / 1e6)
    # Of the LIBRARY pass's median forward (4000 ns).
    assert relu["percent"] == pytest.approx(100 * 650 / 4_000)


def test_layers_rank_by_median_so_one_preempted_iteration_moves_nothing() -> None:
    """A ReLU with one 58 ms iteration and 0.013 ms otherwise once ranked first by its mean."""
    spans = []
    for iteration in range(9):
        origin = iteration * 100_000_000
        relu = 58_000_000 if iteration == 4 else 13_000
        spans += [
            Span(
                "forward",
                "model",
                origin,
                2_000_000 + relu,
                args={"pass": "FRAMEWORK", "iteration": iteration},
            ),
            Span(
                "conv",
                "layer",
                origin,
                2_000_000,
                args={"pass": "FRAMEWORK", "iteration": iteration, "type": "Conv2d"},
            ),
            Span(
                "relu",
                "layer",
                origin + 2_000_000,
                relu,
                args={"pass": "FRAMEWORK", "iteration": iteration, "type": "ReLU"},
            ),
        ]
    rows = layer_table(Profile(level="FRAMEWORK", iterations=9, spans=spans))
    assert [r["name"] for r in rows] == ["conv", "relu"]
    conv, relu = rows
    assert relu["median_ms"] == pytest.approx(0.013)
    assert relu["mean_ms"] > conv["mean_ms"]  # the mean would have ranked it first
    assert conv["percent"] == pytest.approx(100 * 2 / 2.013, rel=1e-3)
    assert conv["iqr_ms"] == 0 and relu["iqr_ms"] == 0
