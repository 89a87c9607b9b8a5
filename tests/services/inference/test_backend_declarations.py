"""What a backend's spec declares about its surfaces, read by the edges that used to branch
on its name: its profilers and roofline (profiling/instruments.py, passes.py), its runtime
facts (runtime_info.py), its ONNX export (convert.py), the options a run takes from the
deployment (workloads/agent_run.py), the options bounded by settings (api/
submission_checks.py) and the models the torch-only workloads take (workloads/
torch_models.py). A throw-away folder declaring them is seen by each edge; one declaring
nothing gets the defaults.

(Here, not in tests/services/inference/backends/: see test_backend_registry.py.)"""

from __future__ import annotations

import importlib
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import services.inference.backends as backends_package
from services.api.submission_checks import check_simple_fields
from services.api.submission_request import Submission
from services.core.manifest import parse_manifest_text
from services.core.messages import RunInference
from services.inference.backend_interface import BackendOptions
from services.inference.backends import registry
from services.inference.backends.convert import ConversionError, convert_to_onnx
from services.inference.backends.registry import create_backend
from services.inference.backends.spec import BackendSpec
from services.inference.profiling.passes import (
    PassResult,
    instrument_for,
    measure_roofline_inputs,
    new_profile,
)
from services.inference.runtime_info import framework_runtime
from services.workloads.agent_run import backend_options
from services.workloads.torch_models import torch_architecture
from shared.settings import Settings

CONFIG = """
from pydantic import Field
from services.inference.backends.spec import BackendOptionsModel, BackendSpec


class Options(BackendOptionsModel):
    repeats: int = Field(1, ge=1, le=8)


CONFIG = BackendSpec(
    name="{name}",
    summary="a throw-away backend declaring its surfaces",
    entry="backend:Echo",
    options=Options,
    probe_module="json",
    distributions=("pyyaml",),
    {declared}
)
"""
DECLARED = """
    profilers={"FRAMEWORK": "surfaces:framework"},
    profiler_gaps={"LIBRARY": "echo runs nothing below its layers"},
    roofline="surfaces:roofline",
    runtime_info="surfaces:facts",
    onnx_export="surfaces:export_onnx",
    refused_options={"url": "the deployment decides"},
    deployment_options={"url": "triton_url"},
    settings_bounds={"repeats": "max_null_outputs"},
    architecture_models="torch.nn.Module",
"""
BACKEND = """
import numpy as np
from services.inference.backend_interface import Backend


class Echo(Backend):
    name = "{name}"

    def version(self) -> str:
        return "1.0"

    def load(self, manifest) -> None:
        pass

    def predict(self, batch):
        return np.asarray(batch)
"""
SURFACES = """
import json

import onnx
from onnx import TensorProto, helper

from services.inference.profiling.instruments import Instrument


class EchoLayers(Instrument):
    pass


def framework(backend):
    return EchoLayers(backend)


def roofline(backend, batch):
    return {"work": {"echo": {"elements": int(batch.size)}}, "peaks": {}}


def facts():
    return {"codec": json.__name__}


def export_onnx(manifest, path, *, opset, exporter):
    shape = ["batch", *manifest.inputs[0].shape]
    graph = helper.make_graph(
        [helper.make_node("Identity", ["input"], ["logits"])],
        "echo",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, str(path))
    return f"echo ({exporter} exporter)"
"""
TINY = Path("tests/fixtures/tiny_cnn.yaml").read_text()


def _drop(declared: str) -> Iterator[str]:
    name = f"throwaway_{uuid.uuid4().hex[:8]}"
    folder = Path(backends_package.__path__[0]) / name
    folder.mkdir()
    try:
        (folder / "__init__.py").write_text("")
        (folder / "config.py").write_text(
            CONFIG.replace("{name}", name).replace("{declared}", declared)
        )
        (folder / "backend.py").write_text(BACKEND.replace("{name}", name))
        (folder / "surfaces.py").write_text(SURFACES)
        importlib.invalidate_caches()
        registry.specs.cache_clear()
        yield name
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for module in [m for m in sys.modules if f".{name}" in m]:
            del sys.modules[module]
        registry.specs.cache_clear()


@pytest.fixture
def declared() -> Iterator[str]:
    """A backend folder that declares every surface."""
    yield from _drop(DECLARED)


@pytest.fixture
def plain() -> Iterator[str]:
    """A backend folder that declares none: each edge must give it the defaults."""
    yield from _drop("")


def _manifest(framework: str) -> object:
    return parse_manifest_text(TINY.replace("name: torch", f"name: {framework}"))


def _message(framework: str, **options: object) -> RunInference:
    return RunInference(
        evaluation_id="e",
        run_id="r",
        shard_keys=[],
        framework=framework,
        device="cpu",
        batch_size=1,
        scenario={},
        manifest={},
        backend_options=dict(options),
    )


def test_profilers_are_the_specs(declared: str, plain: str) -> None:
    backend = create_backend(declared)
    assert type(instrument_for("FRAMEWORK", backend)).__name__ == "EchoLayers"
    assert instrument_for("LIBRARY", backend) == "LIBRARY: echo runs nothing below its layers"
    assert instrument_for("FRAMEWORK", create_backend(plain)) == (
        f"FRAMEWORK: no framework-level profiler for the {plain} backend yet"
    )


def test_shipped_backends_declare_the_profilers_they_had() -> None:
    specs = registry.specs()
    assert set(specs["torch"].profilers) == {"FRAMEWORK", "LIBRARY"}
    assert set(specs["tensorflow"].profilers) == {"FRAMEWORK", "LIBRARY"}
    assert set(specs["onnxruntime"].profilers) == {"FRAMEWORK"}
    assert "per-node kernel time" in specs["onnxruntime"].profiler_gaps["LIBRARY"]
    assert specs["torch"].roofline is not None
    for spec in specs.values():  # every entry names a function its folder holds
        for entry in [*spec.profilers.values(), spec.roofline, spec.onnx_export]:
            if entry is not None and importlib.util.find_spec(spec.probe_module or "json"):
                assert callable(registry.folder_entry(spec.name, entry)), (spec.name, entry)


def test_the_roofline_is_the_specs(declared: str, plain: str) -> None:
    batch = np.zeros((2, 3), np.float32)
    for name, expected in (
        (declared, {"work": {"echo": {"elements": 6}}, "peaks": {}}),
        (plain, None),
    ):
        profile = new_profile("FRAMEWORK")
        profile.passes.append(PassResult("FRAMEWORK", "framework"))
        measure_roofline_inputs(create_backend(name), batch, profile)
        assert profile.roofline_inputs == expected, name


def test_runtime_facts_are_the_specs(declared: str, plain: str) -> None:
    facts = framework_runtime()
    assert facts[declared] == {"codec": "json"}  # its probe module (json) is imported
    assert plain not in facts


def test_a_backend_that_declares_an_onnx_export_converts(
    declared: str, plain: str, tmp_path: Path
) -> None:
    converted = convert_to_onnx(_manifest(declared), tmp_path, opset=13)  # type: ignore[arg-type]
    # The converted manifest runs on the backend whose files are ONNX files.
    assert converted.manifest.framework.name == registry.with_file_format("onnx")
    assert registry.with_file_format("onnx") == "onnxruntime"
    assert converted.manifest.attributes.model_dump()["converter"] == "echo (torchscript exporter)"
    assert converted.manifest.attributes.model_dump()["onnx_opset"] == 13
    with pytest.raises(ConversionError, match=f"'{plain}' manifests do not convert to ONNX"):
        convert_to_onnx(_manifest(plain), tmp_path / "plain")  # type: ignore[arg-type]


def test_options_from_the_deployment_are_the_specs(declared: str, plain: str) -> None:
    deployment = Settings(triton_url="echo:8000", environment="test")
    assert backend_options(_message(declared), {}, deployment).extra == {"url": "echo:8000"}
    assert backend_options(_message(plain), {}, deployment).extra == {}
    assert isinstance(backend_options(_message(plain), {}, deployment), BackendOptions)


def test_options_bounded_by_settings_are_the_specs(declared: str, plain: str) -> None:
    settings = Settings(max_null_outputs=5, environment="test")
    request = Submission(backend_options={"repeats": 6})
    refused = check_simple_fields(request, settings, declared, "cpu")
    assert refused is not None and refused.field == "backendOptions.repeats"
    assert "from 1 to 5" in refused.message and "MAX_NULL_OUTPUTS" in refused.message.upper()
    # Without the declaration the options model's own bound (8) is the only one.
    assert check_simple_fields(request, settings, plain, "cpu") is None


def test_the_torch_only_workloads_take_what_the_spec_says(declared: str, plain: str) -> None:
    accepts = torch_architecture("bricks")
    assert accepts(declared, _manifest(declared)) is None  # type: ignore[arg-type]
    assert "accepted: torch models" in (accepts(plain, _manifest(plain)) or "")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ({"profilers": {"SYSTEM": "m:f"}}, "accepted: FRAMEWORK, LIBRARY"),
        ({"profilers": {"LIBRARY": "m:f"}, "profiler_gaps": {"LIBRARY": "why"}}, "and a gap"),
        ({"runtime_info": "facts"}, "must be 'module:name'"),
        ({"settings_bounds": {"colour": ""}}, "['colour'] undeclared"),
    ],
)
def test_a_spec_refuses_what_no_edge_can_read(declared: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        BackendSpec(name="echo", summary="s", entry="backend:Echo", **declared)  # type: ignore[arg-type]
