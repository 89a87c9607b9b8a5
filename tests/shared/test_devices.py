"""Device names: one vocabulary, one parser, errors that say what is accepted."""

from __future__ import annotations

import pytest

from services.inference.backend_interface import BackendError, BackendOptions
from shared.devices import Device, DeviceError, parse_device
from shared.queues import inference_queue


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("cpu", Device("cpu")), ("cuda", Device("cuda")), ("cuda:1", Device("cuda", 1))],
)
def test_accepted_names(text: str, parsed: Device) -> None:
    assert parse_device(text) == parsed
    assert str(parsed) == text


@pytest.mark.parametrize("text", ["gpu", "cpu:0", "CUDA", "cuda:x", "", "tpu"])
def test_other_names_are_refused_naming_what_is_accepted(text: str) -> None:
    with pytest.raises(DeviceError, match="device: .* accepted: cpu, cuda, cuda:<index>"):
        parse_device(text)


def test_gpu_gets_a_hint() -> None:
    with pytest.raises(DeviceError, match="a GPU is 'cuda'"):
        parse_device("gpu")


def test_queues_routes_and_backends_use_the_same_parser() -> None:
    # An agent on cuda:1 consumes the cuda queue; which GPU is the agent's own setting.
    assert inference_queue("torch", "cuda:1") == inference_queue("torch", "cuda")
    with pytest.raises(DeviceError):
        inference_queue("torch", "gpu")
    with pytest.raises(BackendError, match="accepted: cpu, cuda, cuda:<index>"):
        BackendOptions(device="gpu")
