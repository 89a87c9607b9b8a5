"""Does this machine satisfy a stored run's agent constraints? A rerun reproduces a stack
run here, so the terms that chose its agent (``gpu``, ``threads=2``, ``torch>=2``...) must
hold for this machine too, or the rerun would compare different things.

Terms that pin one machine or worker (``agent=ID``, ``host=NAME``) are not checked: a
rerun elsewhere is the point of rerunning; they are reported as not applied.
"""

from __future__ import annotations

import platform
from typing import Any

from services.core.constraints import AgentView, parse_terms, stored_terms
from services.inference.backends.registry import installed_version
from shared.environment import capture_environment

PINNING_KEYS = frozenset({"agent", "hostname"})


def this_machine(framework: str, device: str, threads: int) -> AgentView:
    env = capture_environment(all_packages=False)
    cpu: dict[str, Any] = env.get("cpu") or {}
    return AgentView(
        id="local",
        hostname=platform.node(),
        queue="",
        framework=framework,
        framework_version=installed_version(framework) or "",
        device=device,
        arch=str(cpu.get("architecture") or platform.machine()),
        gpus=tuple(str(g.get("name", "")) for g in env.get("gpus") or []),
        memory_bytes=int(env.get("memory_bytes") or 0),
        logical_cores=int(cpu.get("logical_cores") or 0),
        threads=threads,
    )


def unmet_terms(
    constraints: dict[str, Any], *, framework: str, device: str, threads: int
) -> tuple[list[str], list[str]]:
    """(unmet: "term: this machine has X", not applied: pinning terms)."""
    texts = stored_terms(constraints, framework)
    if not texts:
        return [], []
    terms = parse_terms(texts, frameworks=[framework])
    machine = this_machine(framework, device, threads)
    unmet, pinned = [], []
    for term in terms:
        if term.key in PINNING_KEYS:
            pinned.append(term.text)
        elif not term.holds(machine):
            unmet.append(f"{term.text!r} (this machine: {term.seen(machine)})")
    return unmet, pinned
