"""Operators belong to the innermost layer around them, counted once (outermost only);
kernels to the layer whose launch carries their correlation id; and the trace gets an
arrow from each launch to its kernel."""

from __future__ import annotations

import pytest

from services.inference.profiling.layer_ops import (
    assign,
    flow_events,
    ops_per_layer,
    scoped_node_ops,
)
from services.inference.profiling.passes import Profile
from services.inference.profiling.spans import GPU_TRACK_BASE, Span
from services.inference.profiling.trace_events import trace_document, trace_problems


def _span(name: str, category: str, start: int, duration: int, **args: object) -> Span:
    thread = GPU_TRACK_BASE if category == "gpu" else 1
    return Span(
        name, category, start, duration, thread, {"pass": "LIBRARY", "iteration": 0, **args}
    )


def _profile() -> Profile:
    return Profile(
        "LIBRARY",
        1,
        spans=[
            _span("block", "library-layer", 0, 1_000),
            _span("block.conv", "library-layer", 0, 600),
            _span("aten::conv2d", "library", 10, 500),
            _span("aten::convolution", "library", 20, 480),  # inside conv2d: not counted again
            _span("cudaLaunchKernel", "library", 30, 5, correlation=7),
            _span("aten::add", "library", 700, 100),  # block's own op
            _span("implicit_gemm", "gpu", 900, 300, correlation=7),
        ],
    )


def test_ops_go_to_the_innermost_layer_and_kernels_follow_their_launch() -> None:
    assigned = {name: [s.name for s in spans] for name, spans in assign(_profile()).items()}
    assert assigned == {"block.conv": ["aten::conv2d", "implicit_gemm"], "block": ["aten::add"]}
    rows = ops_per_layer(_profile(), ["block.conv", "block", "missing"])
    assert [r["layer"] for r in rows] == ["block.conv", "block"]
    assert rows[0]["ops"][0] == {
        "name": "aten::conv2d",
        "kind": "library",
        "calls": 1.0,
        "median_ms": 0.0005,
        "iqr_ms": 0.0,
    }
    assert rows[0]["ops"][1]["kind"] == "gpu"
    assert rows[0]["ops"][1]["median_ms"] == pytest.approx(0.0003)


def test_the_trace_draws_an_arrow_from_each_launch_to_its_kernel() -> None:
    flows = flow_events(_profile(), pid=1, origin_ns=0)
    assert [(f["ph"], f["tid"], f["ts"]) for f in flows] == [
        ("s", 1, 0.03),
        ("f", GPU_TRACK_BASE, 0.9),
    ]
    assert flows[0]["id"] == flows[1]["id"]
    assert trace_problems(trace_document(_profile())) == []


def test_onnx_runtime_nodes_group_by_the_module_scope_in_their_names() -> None:
    def node(name: str, kind: str, duration: int) -> Span:
        args = {
            "pass": "FRAMEWORK",
            "iteration": 0,
            "type": kind,
            "provider": "CPUExecutionProvider",
        }
        return Span(name, "layer", 0, duration, 1, args)

    profile = Profile(
        "FRAMEWORK",
        1,
        spans=[
            node("/layer1/layer1.0/conv1/Conv", "Conv", 3_000),
            node("/layer1/layer1.0/conv1/Relu", "Relu", 1_000),
            node("/fc/Gemm", "Gemm", 2_000),
            node("Flatten_0", "Flatten", 500),  # no scope: not a layer's
        ],
    )
    rows = scoped_node_ops(profile)
    assert [r["layer"] for r in rows] == ["/layer1/layer1.0/conv1", "/fc"]
    assert [o["name"] for o in rows[0]["ops"]] == [
        "Conv (CPUExecutionProvider)",
        "Relu (CPUExecutionProvider)",
    ]
    assert scoped_node_ops(Profile("FRAMEWORK", 1, spans=[])) == []
