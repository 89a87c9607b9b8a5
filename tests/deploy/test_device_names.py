"""Every worker compose and k8s start names a device the workers accept (the Triton
worker was started with `--device gpu`, which every run then refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from shared.devices import parse_device

REPO = Path(__file__).resolve().parents[2]


def _device_args(command: list[Any]) -> list[str]:
    return [str(command[i + 1]) for i, arg in enumerate(command[:-1]) if arg == "--device"]


def _commands(document: Any) -> list[list[Any]]:
    found: list[list[Any]] = []
    if isinstance(document, dict):
        for key, value in document.items():
            if key in {"command", "args"} and isinstance(value, list):
                found.append(value)
            else:
                found += _commands(value)
    elif isinstance(document, list):
        for item in document:
            found += _commands(item)
    return found


def test_compose_and_k8s_workers_name_accepted_devices() -> None:
    files = [REPO / "compose.yaml", *sorted((REPO / "k8s").rglob("*.yaml"))]
    devices = []
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            for command in _commands(document):
                devices += [(path.name, d) for d in _device_args(command)]
    assert len(devices) >= 4, devices  # compose cpu, gpu, triton; k8s cpu, gpu
    for name, device in devices:
        parse_device(device, field=f"{name}: --device")
