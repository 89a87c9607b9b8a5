"""Pure planning: which agent queue runs an evaluation, and how its data splits into shards.

No broker and no database here; the API calls ``match_agent`` to reject an evaluation no
live agent can run before anything is enqueued, and the scheduler task calls it again when
it plans (the agent may have gone away meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from services.preprocess.datasets import Sample
from services.preprocess.pipeline import files_digest, shard_key
from shared.manifest import Input


@dataclass(frozen=True)
class AgentView:
    """What the planner needs to know about a live agent."""

    id: str
    hostname: str
    queue: str
    framework: str
    framework_version: str
    device: str


@dataclass(frozen=True)
class Requirement:
    framework: str
    device: str = "cpu"
    # PEP 440 specifier the agent's framework version must satisfy; empty accepts any.
    framework_version: str = ""
    hostname: str = ""


@dataclass(frozen=True)
class UnmetConstraint:
    """No live agent satisfies ``constraint``; ``message`` says what was asked and seen."""

    constraint: str
    message: str


@dataclass(frozen=True)
class AgentChoice:
    queue: str
    agents: list[AgentView] = field(default_factory=list)


def host_queue(queue: str, hostname: str) -> str:
    """The queue only the agents on ``hostname`` consume (for a hostname constraint)."""
    return f"{queue}@{hostname}"


def match_agent(agents: Sequence[AgentView], need: Requirement) -> AgentChoice | UnmetConstraint:
    """Narrow live agents constraint by constraint, so a miss names the first unmet one."""
    seen = ", ".join(sorted({f"{a.framework}/{a.device}@{a.hostname}" for a in agents})) or "none"
    candidates = [a for a in agents if a.framework == need.framework]
    if not candidates:
        return UnmetConstraint(
            "framework",
            f"framework: no live agent runs {need.framework!r} (live agents: {seen})",
        )
    candidates = [a for a in candidates if a.device == need.device]
    if not candidates:
        return UnmetConstraint(
            "device",
            f"device: no live {need.framework} agent on device {need.device!r} "
            f"(live agents: {seen})",
        )
    if need.framework_version:
        try:
            spec = SpecifierSet(need.framework_version)
        except InvalidSpecifier:
            return UnmetConstraint(
                "frameworkVersion",
                f"frameworkVersion: {need.framework_version!r} is not a version constraint "
                "such as '>=2.1,<3'",
            )
        versions = sorted({a.framework_version for a in candidates})
        candidates = [a for a in candidates if spec.contains(a.framework_version, prereleases=True)]
        if not candidates:
            return UnmetConstraint(
                "frameworkVersion",
                f"frameworkVersion: no live {need.framework} agent matches "
                f"{need.framework_version!r} (live versions: {', '.join(versions)})",
            )
    if need.hostname:
        hosts = sorted({a.hostname for a in candidates})
        candidates = [a for a in candidates if a.hostname == need.hostname]
        if not candidates:
            return UnmetConstraint(
                "hostname",
                f"hostname: no live {need.framework}/{need.device} agent on {need.hostname!r} "
                f"(live hosts: {', '.join(hosts)})",
            )
        return AgentChoice(queue=host_queue(candidates[0].queue, need.hostname), agents=candidates)
    return AgentChoice(queue=candidates[0].queue, agents=candidates)


@dataclass(frozen=True)
class PlannedShard:
    index: int
    key: str
    sample_ids: list[str]


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
