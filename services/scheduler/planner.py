"""Pure planning: which agent queue runs an evaluation, and how its data splits into shards.

No broker and no database here; the API (through ``agents.find_agent``) calls
``match_agent`` to reject an evaluation no
live agent can run before anything is enqueued, and the scheduler task calls it again when
it plans (the agent may have gone away meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from services.core.constraints import AgentView, Requirement, Term
from services.core.dispatch import PlannedShard
from services.core.manifest_sections import Input
from services.preprocess.datasets import Sample
from services.preprocess.shard_keys import files_digest, shard_key
from shared.queues import host_queue


@dataclass(frozen=True)
class UnmetConstraint:
    """No live agent satisfies ``constraint``; ``message`` says what was asked and seen."""

    constraint: str
    message: str


@dataclass(frozen=True)
class AgentChoice:
    # Where to send the run: the widest queue whose consumers all satisfy the requirement.
    queue: str
    # Every live agent that satisfies it (a fan-out runs one evaluation on each).
    agents: list[AgentView] = field(default_factory=list)


def _constraint_name(term: Term) -> str:
    # GraphQL field names: the framework's version is "frameworkVersion", as before terms.
    return "frameworkVersion" if term.key == "framework" else term.key


def _unmet(term: Term, need: Requirement, candidates: Sequence[AgentView]) -> UnmetConstraint:
    name = _constraint_name(term)
    seen = ", ".join(sorted({term.seen(a) for a in candidates}))
    why = f" ({term.source})" if term.source else ""
    if term.key == "framework":
        return UnmetConstraint(
            name,
            f"{name}: no live {need.framework} agent satisfies {term.text!r}{why}; "
            f"live {need.framework} agents have {seen}",
        )
    return UnmetConstraint(
        name,
        f"{name}: no live {need.framework}/{need.device} agent satisfies {term.text!r}{why}; "
        f"those that satisfy the rest have {seen}",
    )


def route(chosen: Sequence[AgentView], live: Sequence[AgentView]) -> str:
    """The widest queue every consumer of which is in ``chosen``: the shared queue keeps
    load balancing across identical workers; a host or direct queue is used only when a
    wider one would also reach agents that do not satisfy the requirement."""
    ids = {a.id for a in chosen}
    first = chosen[0]
    shared = [a for a in live if a.queue == first.queue]
    if all(a.id in ids for a in shared):
        return first.queue
    for agent in chosen:
        if all(a.id in ids for a in shared if a.hostname == agent.hostname):
            return host_queue(agent.queue, agent.hostname)
    # An agent registered before direct queues existed is reachable by its host only.
    return first.direct_queue or host_queue(first.queue, first.hostname)


def _seen(agents: Sequence[AgentView]) -> str:
    # Only for a miss's message: built per match, it was a third of a fan-out member's plan.
    return ", ".join(sorted({f"{a.framework}/{a.device}@{a.hostname}" for a in agents})) or "none"


def match_agent(agents: Sequence[AgentView], need: Requirement) -> AgentChoice | UnmetConstraint:
    """Narrow live agents constraint by constraint, so a miss names the first unmet one."""
    candidates = [a for a in agents if a.framework == need.framework]
    if not candidates:
        return UnmetConstraint(
            "framework",
            f"framework: no live agent runs {need.framework!r} (live agents: {_seen(agents)})",
        )
    candidates = [a for a in candidates if a.device == need.device]
    if not candidates:
        return UnmetConstraint(
            "device",
            f"device: no live {need.framework} agent on device {need.device!r} "
            f"(live agents: {_seen(agents)})",
        )
    for term in need.terms:
        narrowed = [a for a in candidates if term.holds(a)]
        if not narrowed:
            return _unmet(term, need, candidates)
        candidates = narrowed
    return AgentChoice(queue=route(candidates, agents), agents=candidates)


def plan_shards(
    samples: Sequence[Sample], spec: Input, *, shard_samples: int
) -> list[PlannedShard]:
    """Split samples into fixed-size shards, each addressed by what goes in and the steps.

    The address includes a digest of the files' bytes, so an edited image or a synthetic
    set with another seed (same file names, other pixels) never hits a stale shard.
    """
    if shard_samples < 1:
        raise ValueError("shard_samples: must be at least 1")
    shards = []
    for index, start in enumerate(range(0, len(samples), shard_samples)):
        chunk = samples[start : start + shard_samples]
        ids = [s.id for s in chunk]
        shards.append(PlannedShard(index, shard_key(ids, spec, files_digest(chunk)), ids))
    return shards
