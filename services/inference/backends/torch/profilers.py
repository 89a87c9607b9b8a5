"""The torch backend's own instruments (FRAMEWORK: its modules' hooks; LIBRARY: the torch
profiler's operators and kernels) and its roofline inputs, named in its config.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument


def framework(backend: Backend) -> Instrument | str:
    from services.inference.profiling import torch_layers

    return torch_layers.unhookable(backend) or torch_layers.TorchLayers(backend)


def library(backend: Backend) -> Instrument | str:
    from services.inference.profiling import torch_layers, torch_library

    return torch_layers.unhookable(backend) or torch_library.TorchLibrary(backend)


def roofline_inputs(backend: Backend, batch: np.ndarray) -> dict[str, Any]:
    """Each layer's FLOPs and bytes (an eager model) and the peaks of its device."""
    from services.inference.profiling import roofline

    work = roofline.layer_work(backend, batch)
    peaks = roofline.measure_peaks(roofline.model_device(getattr(backend, "model", None)))
    return {"work": work, "peaks": peaks}
