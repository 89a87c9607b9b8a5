"""A backend is one folder: a throw-away one dropped into services/inference/backends/ is
offered by the registry, the manifest, the API's option checks, worker detection, the
recorded environment and the CLI's help, with nothing else edited.

(Here, not in tests/services/inference/backends/: a test module there would put that
folder on sys.path, where its tensorrt/ folder would pass for the TensorRT package.)"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import services.inference.backends as backends_package
from services.api.submission_checks import backend_options_problem
from services.core.manifest import parse_manifest_text
from services.inference.agent import Agent
from services.inference.backend_interface import Backend, BackendOptions, BackendUnavailable
from services.inference.backends import registry
from services.inference.backends.registry import create_backend
from shared.environment import key_packages

CONFIG = """
from typing import Literal
from pydantic import Field
from services.inference.backends.spec import BackendOptionsModel, BackendSpec, Choice


class Options(BackendOptionsModel):
    flavour: Choice[Literal["plain", "salted"]] = "plain"
    repeats: int = Field(1, ge=1, le=8)


CONFIG = BackendSpec(
    name="{name}",
    summary="a throw-away backend for the registry test",
    entry="backend:Echo",
    options=Options,
    probe_module="json",
    distributions=("pyyaml",),
    related_packages=("packaging",),
    aliases=("{name}_alias",),
)
"""
BACKEND = """
import numpy as np
from services.inference.backend_interface import Backend


class Echo(Backend):
    name = "{name}"

    def version(self) -> str:
        return "1.0"

    def load(self, manifest) -> None:
        self.repeats = int(self.options.extra.get("repeats", 1))

    def predict(self, batch):
        return np.asarray(batch) * self.repeats
"""
TINY = Path("tests/fixtures/tiny_cnn.yaml").read_text()


@pytest.fixture
def throwaway() -> Iterator[str]:
    name = f"throwaway_{uuid.uuid4().hex[:8]}"
    folder = Path(backends_package.__path__[0]) / name
    folder.mkdir()
    try:
        (folder / "__init__.py").write_text("")
        (folder / "config.py").write_text(CONFIG.replace("{name}", name))
        (folder / "backend.py").write_text(BACKEND.replace("{name}", name))
        importlib.invalidate_caches()
        registry.specs.cache_clear()
        yield name
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for module in [m for m in sys.modules if f".{name}" in m]:
            del sys.modules[module]
        registry.specs.cache_clear()


def test_a_new_folder_is_offered_everywhere_a_backend_is_named(throwaway: str) -> None:
    assert throwaway in registry.backend_names()

    backend = create_backend(throwaway, BackendOptions(extra={"repeats": 3}))
    backend.load(None)  # type: ignore[arg-type]
    assert backend.predict(np.ones(2)).tolist() == [3.0, 3.0]

    for name in (throwaway, f"{throwaway}_alias"):
        text = TINY.replace("framework: {name: torch", f"framework: {{name: {name}")
        manifest = parse_manifest_text(text)
        assert manifest.framework.name == throwaway

    assert backend_options_problem(throwaway, {"flavour": "SALTED", "repeats": 8}) is None
    unknown = backend_options_problem(throwaway, {"colour": "red"})
    assert unknown is not None and unknown.field == "backendOptions.colour"
    assert unknown.accepted == ["flavour", "repeats"]
    too_many = backend_options_problem(throwaway, {"repeats": 9})
    assert too_many is not None and too_many.field == "backendOptions.repeats"
    assert "less than or equal to 8" in too_many.message

    assert throwaway in registry.available_backends("cpu")
    assert throwaway not in registry.available_backends("cuda")  # it declared cpu only
    assert Agent(frameworks=[throwaway]).frameworks == [throwaway]
    assert registry.installed_version(throwaway) == importlib.metadata.version("pyyaml")
    assert {"pyyaml", "packaging"} <= set(key_packages())

    shown = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "bench", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())},
    )
    assert throwaway in shown.stdout, shown.stdout + shown.stderr


def test_every_shipped_backend_declares_its_extra_and_keeps_url_out_of_submissions() -> None:
    import tomllib

    extras = tomllib.loads(Path("pyproject.toml").read_text())["project"]["optional-dependencies"]
    shipped = registry.specs()
    assert set(shipped) == {"null", "onnxruntime", "tensorflow", "tensorrt", "torch", "triton"}
    for spec in shipped.values():
        assert spec.install_extra in extras, spec.name
        assert "url" not in spec.option_keys, spec.name
    assert shipped["triton"].refused_options.keys() == {"url"}
    # tensorrt needs a GPU: a CPU worker never offers it, installed or not.
    assert "tensorrt" not in registry.available_backends("cpu")


def test_the_spec_and_the_class_agree_on_being_asynchronous() -> None:
    for name, spec in registry.specs().items():
        try:
            cls = registry.backend_class(name)
        except BackendUnavailable as exc:  # its framework is not installed here
            print(f"{name}: class not importable here ({exc}); its spec alone was read")
            continue
        assert cls.asynchronous is spec.asynchronous, name


def test_a_synchronous_backend_refuses_predict_async() -> None:
    backend: Backend = create_backend("null")
    with pytest.raises(Exception, match="not asynchronous"):
        backend.predict_async(np.zeros(1), lambda result, error: None)
