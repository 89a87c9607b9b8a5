"""Device names, parsed in one place: the CLI, agents, routing, backend options, compose
and k8s all speak ``cpu``, ``cuda`` or ``cuda:<index>``.

Queues carry the device's kind only (``inference.torch.cuda``): which GPU of a machine an
agent drives is its own setting, not something a submission routes on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ACCEPTED = "cpu, cuda, cuda:<index>"
_DEVICE = re.compile(r"^(cpu|cuda)(?::(\d{1,3}))?$")


class DeviceError(ValueError):
    """A device name outside the vocabulary; the message names the field and what is accepted."""


@dataclass(frozen=True)
class Device:
    kind: str  # "cpu" or "cuda"
    index: int | None = None

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"


def parse_device(text: str, *, field: str = "device") -> Device:
    match = _DEVICE.match(text or "")
    if match is None or (match.group(1) == "cpu" and match.group(2) is not None):
        hint = " (a GPU is 'cuda')" if text in {"gpu", "GPU"} else ""
        raise DeviceError(f"{field}: {text!r} is not accepted{hint}; accepted: {ACCEPTED}")
    index = match.group(2)
    return Device(match.group(1), int(index) if index is not None else None)
