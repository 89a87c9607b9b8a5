"""The TensorFlow backend's own instruments (FRAMEWORK: a Keras model's layers; LIBRARY:
the TensorFlow profiler's ops), named in its config.py."""

from __future__ import annotations

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument


def _unprofilable(backend: Backend, level: str) -> str:
    from services.inference.profiling import keras_layers

    return keras_layers.unprofilable(backend).replace("FRAMEWORK", level, 1)


def framework(backend: Backend) -> Instrument | str:
    from services.inference.profiling import keras_layers

    return _unprofilable(backend, "FRAMEWORK") or keras_layers.KerasLayers(backend)


def library(backend: Backend) -> Instrument | str:
    from services.inference.profiling import tf_library

    return _unprofilable(backend, "LIBRARY") or tf_library.TensorFlowLibrary(backend)
