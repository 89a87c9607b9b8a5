"""The TensorFlow / Keras backend's registration."""

from __future__ import annotations

from pydantic import Field

from services.inference.backends.spec import BackendOptionsModel, BackendSpec, PlainText, ZooSpec


class TensorFlowOptions(BackendOptionsModel):
    seed: int = Field(0, ge=0, le=2**31 - 1)  # builtin random weights
    signature: PlainText = "serving_default"


CONFIG = BackendSpec(
    name="tensorflow",
    summary="TensorFlow / Keras: applications, .keras files and SavedModels",
    entry="backend:TensorFlowBackend",
    options=TensorFlowOptions,
    probe_module="tensorflow",
    distributions=("tensorflow", "tensorflow-cpu"),
    devices=("cpu", "cuda"),
    aliases=("tf", "keras"),
    profilers={"FRAMEWORK": "profilers:framework", "LIBRARY": "profilers:library"},
    zoos={"keras": ZooSpec("keras", "zoos:keras_names")},
)
