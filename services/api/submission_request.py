"""What a client asks for: one evaluation request, and how a fan-out is asked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from services.core.workload import DEFAULT_WORKLOAD
from shared.db.evaluations import Evaluation


@dataclass(frozen=True)
class SubmitRequest:
    model: str | None = None
    version: str | None = None
    manifest_yaml: str | None = None
    framework: str | None = None
    # None: the device a constraint term names, else "cpu".
    device: str | None = None
    scenario: str = "offline"
    # Whatever the client sent; checked to be an object before use.
    settings: Any = dc_field(default_factory=dict)
    batch_size: int = 1
    dataset: str = "synthetic"
    samples: int | None = 64
    seed: int = 0
    trace_level: str = "NONE"
    # Input.fidelity over the manifest's own (stored in the evaluation's manifest); None:
    # the manifest's.
    preprocessing: str | None = None
    # {"require": [terms of services.core.constraints]}, plus the older structured
    # keys "hostname" and "framework_version" (a PEP 440 specifier on the framework).
    constraints: dict[str, Any] = dc_field(default_factory=dict)
    backend_options: Any = dc_field(default_factory=dict)
    # Intra-op threads over the agent's setting; None: the agent's, else chosen by it.
    threads: int | None = None
    # One evaluation on every matching agent, grouped for comparison, instead of one.
    fan_out: bool = False
    # The kinds of measurement the client named (services/workloads/<name>/), each with the
    # options it gave: the typed inputs (bricks, training) and the generic one (workload,
    # workloadOptions). None named: a LoadGen run on the dataset; more than one is refused.
    workloads: tuple[tuple[str, Any], ...] = ()
    # The group this evaluation joins and what it is in it
    # (services/api/campaigns/sweep/group.py): {"id": ..., "kind": "sweep", "parameter":
    # ..., "value": ...}. None: its own, or a fan-out's (fan_out).
    group: dict[str, Any] | None = None
    # A data-parallel gang (services/api/campaigns/training_scaling/group.py): one
    # training evaluation per rank on this many distinct matching agents, each pinned to
    # its agent, with its rank and the ranks sharing its host in its group. None: one
    # evaluation.
    gang_size: int | None = None
    # The largest gang the request's group will submit later (a training scaling's largest
    # world size): refused now, naming worldSizes, when the live agents cannot fill it.
    gang_largest: int | None = None
    # The client's idempotency key for this submission (services/api/client_keys.py): a
    # retry with the same key returns what the first try stored. None: no key.
    client_key: str | None = None

    @property
    def workload(self) -> str:
        """The kind of measurement asked for (the first named; a second is refused)."""
        return str(self.workloads[0][0]) if self.workloads else DEFAULT_WORKLOAD


@dataclass(frozen=True)
class FanOut:
    """The evaluations of one fan-out, one per matching agent, sharing ``group_id``."""

    group_id: str
    evaluations: list[Evaluation]


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(data: dict[str, Any]) -> dict[str, Any]:
    """GraphQL clients write minDurationS; ScenarioConfig names it min_duration_s."""
    return {_CAMEL.sub("_", k).lower(): v for k, v in data.items()}
