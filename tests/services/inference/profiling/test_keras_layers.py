"""FRAMEWORK level on TensorFlow: Keras layers timed one by one in eager execution."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.core.manifest import sha256_of
from services.inference.backends.registry import create_backend
from services.inference.profiling.analysis import summarise
from services.inference.profiling.keras_layers import EAGER_NOTE
from services.inference.profiling.passes import Profile, profile_backend
from services.inference.profiling.trace_events import trace_document, trace_problems
from tests.support.manifests import tensor_manifest

SHAPE = (16, 16, 1)


def _profiled(model: Any, tmp_path: Path, level: str) -> Profile:
    """``model`` saved, loaded by the tensorflow backend and profiled at ``level``."""
    path = tmp_path / "tiny.keras"
    model.save(path)
    manifest = tensor_manifest(
        framework="tensorflow",
        source={"file": {"path": path.name, "sha256": sha256_of(path)}},
        shape=SHAPE,
        base_dir=tmp_path,
    )
    backend = create_backend("tensorflow")
    backend.load(manifest)
    batch = np.random.default_rng(0).random((2, *SHAPE), dtype=np.float32)
    return profile_backend(backend, batch, level, 3)


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_keras_layers_are_timed_and_cover_the_pass(tmp_path: Path, kind: str) -> None:
    # The backend module before keras: it loads Triton before TensorFlow (see its comment).
    create_backend("tensorflow")
    import keras

    if kind == "sequential":
        model = keras.Sequential(
            [
                keras.Input(SHAPE),
                keras.layers.Conv2D(8, 3, activation="relu", name="conv"),
                keras.layers.Flatten(name="flatten"),
                keras.layers.Dense(5, name="dense"),
            ]
        )
    else:
        inputs = keras.Input(SHAPE)
        hidden = keras.layers.Conv2D(8, 3, name="conv")(inputs)
        added = keras.layers.Add(name="add")([hidden, hidden])
        outputs = keras.layers.Dense(5, name="dense")(keras.layers.Flatten(name="flatten")(added))
        model = keras.Model(inputs, outputs)
    profile = _profiled(model, tmp_path, "FRAMEWORK")
    summary = summarise(profile)
    names = {row["name"] for row in summary["layers"]}
    assert {"conv", "flatten", "dense"} <= names
    dense = next(row for row in summary["layers"] if row["name"] == "dense")
    assert dense["type"] == "Dense" and dense["memory_bytes"] == 2 * 5 * 4
    assert 0 < summary["coverage"]["ratio"] <= 1
    assert EAGER_NOTE in summary["notes"]
    assert trace_problems(trace_document(profile)) == []


def test_the_library_pass_lists_each_keras_layer_s_tensorflow_operators(tmp_path: Path) -> None:
    """LIBRARY on TensorFlow: its profiler's eager operators, per layer, in the trace."""
    create_backend("tensorflow")
    import keras

    inputs = keras.Input(SHAPE)
    hidden = keras.layers.Conv2D(8, 3, name="conv")(inputs)
    outputs = keras.layers.Dense(5, name="dense")(keras.layers.Flatten(name="flatten")(hidden))
    profile = _profiled(keras.Model(inputs, outputs), tmp_path, "LIBRARY")
    summary = summarise(profile)
    assert [p["level"] for p in summary["passes"]] == ["NONE", "MODEL", "FRAMEWORK", "LIBRARY"]
    assert not any("LIBRARY" in note and "no library" in note for note in summary["notes"])
    calls = {row["name"] for row in summary["library_ops"] if row["kind"] == "library"}
    assert {"tf::Conv2D", "tf::MatMul"} <= calls, calls
    per_layer = {
        entry["layer"]: {op["name"] for op in entry["ops"]} for entry in summary["layer_ops"]
    }
    assert "tf::Conv2D" in per_layer["conv"] and "tf::MatMul" in per_layer["dense"], per_layer
    assert trace_problems(trace_document(profile)) == []
