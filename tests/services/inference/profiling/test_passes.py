"""Leveled passes on real frameworks: a small CNN under torch and ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from services.core.manifest import ModelManifest
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import create_backend
from services.inference.profiling.analysis import summarise
from services.inference.profiling.passes import profile_backend
from services.inference.profiling.trace_events import trace_document, trace_problems
from tests.support.backend_fixtures import DIGITS_SHAPE

ITERATIONS = 3


def _batch() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((2, *DIGITS_SHAPE)).astype(np.float32)


def _loaded(framework: str, manifest: ModelManifest, **extra: object) -> Backend:
    backend = create_backend(framework, BackendOptions(intra_op_threads=1, extra=dict(extra)))
    backend.load(manifest)
    return backend


def _module_names(backend: Backend) -> set[str]:
    model: torch.nn.Module = backend.model  # type: ignore[attr-defined]
    return {name for name, module in model.named_modules() if name and not list(module.children())}


def test_none_records_latencies_and_no_spans(digits_manifest: ModelManifest) -> None:
    profile = profile_backend(_loaded("torch", digits_manifest), _batch(), "NONE", ITERATIONS)
    assert [p.level for p in profile.passes] == ["NONE"]
    assert len(profile.passes[0].latencies_ns) == ITERATIONS
    assert profile.spans == []


def test_torch_framework_pass_names_every_leaf_module(digits_manifest: ModelManifest) -> None:
    backend = _loaded("torch", digits_manifest)
    profile = profile_backend(backend, _batch(), "FRAMEWORK", ITERATIONS)
    summary = summarise(profile)
    assert [p["level"] for p in summary["passes"]] == ["NONE", "MODEL", "FRAMEWORK"]
    assert {row["name"] for row in summary["layers"]} == _module_names(backend)
    conv = next(row for row in summary["layers"] if row["type"] == "Conv2d")
    assert conv["input_shapes"][0][0] == 2  # the batch
    assert conv["memory_bytes"] > 0 and conv["cold_ms"] is not None
    coverage = summary["coverage"]
    print(f"digits_cnn torch coverage {coverage['ratio']:.1%}")
    assert 0 < coverage["ratio"] <= 1
    assert summary["cold"]["level"] == "FRAMEWORK"
    assert trace_problems(trace_document(profile)) == []


def test_hooks_are_removed_after_the_pass(digits_manifest: ModelManifest) -> None:
    backend = _loaded("torch", digits_manifest)
    profile_backend(backend, _batch(), "LIBRARY", 1)
    model: torch.nn.Module = backend.model  # type: ignore[attr-defined]
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_torch_library_ops_nest_under_layers(digits_manifest: ModelManifest) -> None:
    backend = _loaded("torch", digits_manifest)
    profile = profile_backend(backend, _batch(), "LIBRARY", ITERATIONS)
    library = [s for s in profile.spans if s.category == "library"]
    assert any(s.name.startswith("aten::conv") for s in library)
    layers = [s for s in profile.spans if s.category == "library-layer"]
    assert {s.name for s in layers} >= _module_names(backend)
    assert trace_problems(trace_document(profile)) == []
    summary = summarise(profile)
    assert summary["library_ops"] and summary["library_ops"][0]["mean_ms"] > 0
    # Each of the slowest layers lists the operators it called: a conv layer its conv op.
    per_layer = {entry["layer"]: entry["ops"] for entry in summary["layer_ops"]}
    conv_layers = {row["name"] for row in summary["layers"] if row["type"] == "Conv2d"}
    convs = [name for name in per_layer if name in conv_layers]
    assert convs and all(per_layer[name][0]["name"].startswith("aten::conv") for name in convs), (
        per_layer
    )
    if not torch.cuda.is_available():
        print("skipped CUDA kernels:", summary["notes"])
        assert any("no CUDA kernels traced" in note for note in summary["notes"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA kernels need a GPU (none here)")
def test_torch_library_traces_cuda_kernels_with_correlation_ids(
    digits_manifest: ModelManifest,
) -> None:
    backend = create_backend("torch", BackendOptions(device="cuda"))
    backend.load(digits_manifest)
    profile = profile_backend(backend, _batch(), "LIBRARY", ITERATIONS)
    kernels = [s for s in profile.spans if s.category == "gpu"]
    assert kernels and all("correlation" in k.args for k in kernels)
    summary = summarise(profile)
    assert any(row["kind"] == "gpu" for row in summary["library_ops"])
    gpu = summary["gpu_time"]
    assert 0 < gpu["busy_ms"] <= gpu["model_ms"] and 0 < gpu["busy_share"] <= 1
    print(f"digits_cnn on cuda: GPU busy {gpu['busy_share']:.1%} of the LIBRARY pass's model time")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA layers need a GPU (none here)")
def test_framework_layers_on_a_gpu_hold_their_kernels(digits_manifest: ModelManifest) -> None:
    backend = create_backend("torch", BackendOptions(device="cuda"))
    backend.load(digits_manifest)
    summary = summarise(profile_backend(backend, _batch(), "FRAMEWORK", ITERATIONS))
    # Synchronised hooks: the layers account for most of the model time, not just launches.
    print(f"digits_cnn on cuda: FRAMEWORK coverage {summary['coverage']['ratio']:.1%}")
    assert summary["coverage"]["ratio"] > 0.5
    assert any("synchronised around every module call" in note for note in summary["notes"])


def test_system_pass_samples_cpu_and_memory(digits_manifest: ModelManifest) -> None:
    backend = _loaded("torch", digits_manifest)
    # Enough iterations to outlast a few sampling intervals.
    profile = profile_backend(backend, _batch(), "SYSTEM", 200)
    names = {c.name for c in profile.counters}
    assert {"cpu", "memory"} <= names
    summary = summarise(profile)
    assert summary["system"]["memory.rss_mb"]["max"] > 0
    print("system notes:", summary["notes"])


def test_system_pass_shorter_than_one_interval_still_has_cpu_and_memory(
    digits_manifest: ModelManifest,
) -> None:
    # CI's host ran 200 digits iterations inside one 20 ms interval and sampled nothing.
    profile = profile_backend(_loaded("torch", digits_manifest), _batch(), "SYSTEM", 1)
    names = [c.name for c in profile.counters]
    assert names.count("cpu") >= 1 and names.count("memory") >= 1
    assert summarise(profile)["system"]["memory.rss_mb"]["max"] > 0


@pytest.mark.usefixtures("data_dir")
def test_onnxruntime_framework_pass_reads_per_node_profiling(
    digits_manifest: ModelManifest,
) -> None:
    backend = _loaded("onnxruntime", digits_manifest)
    profile = profile_backend(backend, _batch(), "FRAMEWORK", ITERATIONS)
    summary = summarise(profile)
    types = {row["type"] for row in summary["layers"]}
    assert types & {"Conv", "FusedConv"}
    assert all(row["calls"] == 1 for row in summary["layers"])
    assert 0 < summary["coverage"]["ratio"] <= 1
    print(f"digits_cnn onnxruntime coverage {summary['coverage']['ratio']:.1%}")
    # Its nodes grouped by the torch module in their names: operators per layer.
    print("onnxruntime layer ops:", summary["layer_ops"][:2])
    assert summary["layer_ops"] and all(entry["ops"] for entry in summary["layer_ops"])
    assert all("(CPUExecutionProvider)" in op["name"] for op in summary["layer_ops"][0]["ops"])
    assert trace_problems(trace_document(profile)) == []
    assert any("LIBRARY" in n for n in profile_backend(backend, _batch(), "LIBRARY", 1).notes)


def test_torchscript_mode_skips_the_layer_pass_with_its_reason(
    digits_manifest: ModelManifest,
) -> None:
    backend = _loaded("torch", digits_manifest, mode="torchscript")
    profile = profile_backend(backend, _batch(), "FRAMEWORK", 1)
    assert any("mode=eager" in note for note in profile.notes)
    assert profile.cold is not None and profile.cold.level == "MODEL"


def test_iterations_must_be_positive(digits_manifest: ModelManifest) -> None:
    with pytest.raises(ValueError, match="iterations"):
        profile_backend(_loaded("torch", digits_manifest), _batch(), "MODEL", 0)
