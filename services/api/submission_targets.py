"""Which agents a submission needs: its constraint terms, the requirement they make, a
fan-out's or a gang's targets.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from services.api.bounds import (
    constraint_terms_problem,
)
from services.api.rejections import Rejection
from services.api.submission_checks import invalid
from services.core.constraints import (
    AgentView,
    ConstraintError,
    Requirement,
    device_named,
    framework_named,
    parse_terms,
    requirement,
)
from services.core.manifest import (
    ModelManifest,
)
from services.core.request import RunRequest
from services.inference.backends import registry
from shared.settings import Settings

CONSTRAINT_KEYS = ("require", "hostname", "framework_version")


def constraint_texts(request: RunRequest, settings: Settings) -> list[str] | Rejection:
    """The request's constraints as terms of the constraint language."""
    unknown = set(request.constraints) - set(CONSTRAINT_KEYS)
    if unknown:
        return Rejection(
            "InvalidInput",
            f"constraints: unknown {sorted(unknown)}; accepted: {', '.join(CONSTRAINT_KEYS)}",
            field="constraints",
            accepted=list(CONSTRAINT_KEYS),
        )
    require = request.constraints.get("require", [])
    if not isinstance(require, list) or not all(isinstance(t, str) for t in require):
        return Rejection(
            "InvalidInput",
            'constraints.require: must be a list of terms such as ["onnxruntime>=1.20", "gpu"]',
            field="constraints.require",
        )
    texts = list(require)
    if request.constraints.get("hostname"):
        texts.append(f"host={request.constraints['hostname']}")
    problem = constraint_terms_problem(texts, settings)
    if problem is not None:
        return invalid(problem)
    version = request.constraints.get("framework_version") or ""
    if len(version) > settings.max_constraint_term_chars:
        accepted = f"at most {settings.max_constraint_term_chars} characters"
        return Rejection(
            "InvalidInput",
            f"constraints.frameworkVersion: {len(version)} characters; accepted: {accepted}",
            field="constraints.frameworkVersion",
            accepted=[accepted],
        )
    return texts


def target_of(
    request: RunRequest, manifest: ModelManifest, texts: list[str]
) -> tuple[str, str, list[str]] | Rejection:
    """Framework, device and the full list of terms: a framework or device named only by
    a constraint term (``onnxruntime>=1.20``, ``device=cuda``) is the one that runs."""
    try:
        terms = parse_terms(texts, frameworks=registry.backend_names())
        named_framework, named_device = framework_named(terms), device_named(terms)
    except ConstraintError as exc:
        return Rejection("InvalidInput", str(exc), field=f"constraints.require[{exc.index}]")
    except ValueError as exc:
        return Rejection("InvalidInput", str(exc), field="constraints.require")
    framework = request.framework or named_framework or manifest.framework.name
    if named_framework and named_framework != framework:
        return Rejection(
            "InvalidInput",
            f"constraints.require: names framework {named_framework!r} but framework is "
            f"{framework!r}; drop one of them",
            field="constraints.require",
        )
    device = request.device or named_device or "cpu"
    version = request.constraints.get("framework_version")
    if version:
        try:
            SpecifierSet(version)
        except InvalidSpecifier:
            return Rejection(
                "InvalidInput",
                f"constraints.frameworkVersion: {version!r} is not a version constraint "
                "such as '>=2.1,<3'",
                field="constraints.frameworkVersion",
            )
        texts = [*texts, f"{framework}{version}"]
    return framework, device, texts


def requirement_of(
    manifest: ModelManifest, framework: str, device: str, texts: list[str]
) -> Requirement | Rejection:
    try:
        return requirement(
            framework=framework,
            device=device,
            texts=texts,
            frameworks=registry.backend_names(),
            manifest_framework=manifest.framework.name,
            manifest_version=manifest.framework.version,
            manifest_ref=manifest.ref,
        )
    except ConstraintError as exc:  # every term was parsed in target_of; kept as a guard
        return Rejection("InvalidInput", str(exc), field="constraints")


def gang_of(
    agents: list[AgentView], size: int, group_info: dict[str, Any], largest: int | None = None
) -> tuple[list[list[str]], list[dict[str, Any] | None]] | Rejection:
    """Pins and groups of a gang of ``size`` ranks on distinct agents, in the order of their
    ids (so a gang of two reuses the agent a gang of one ran on). ``largest``: the largest
    gang the group will ask for later, refused now when the live agents cannot fill it.

    Each rank of a data-parallel gang holds in its group its ``rank``, its ``local_rank``
    (its index among the gang's ranks on its host: the rank sets LOCAL_RANK from it, which
    picks its GPU) and ``host_ranks``."""
    need = max(size, largest or size)
    if len(agents) < need:
        accepted = f"1..{len(agents)}" if agents else "none"
        return Rejection(
            "NoMatchingAgent",
            f"worldSizes: {need} ranks need {need} live agents that can run this training; "
            f"{len(agents)} match, so the world sizes accepted now are {accepted}",
            field="worldSizes",
            accepted=[accepted],
        )
    chosen = sorted(agents, key=lambda a: a.id)[:size]
    on_host = Counter(a.hostname for a in chosen)
    seen: Counter[str] = Counter()
    infos: list[dict[str, Any] | None] = []
    # A data-parallel gang (its group has a world size) gives each rank its place; a pin
    # to one agent (the accuracy + performance pair) keeps its group record as it is.
    placed = "world_size" in group_info
    for rank, agent in enumerate(chosen):
        place = {"rank": rank, "local_rank": seen[agent.hostname]}
        place["host_ranks"] = on_host[agent.hostname]
        infos.append({**group_info, **place} if placed else dict(group_info))
        seen[agent.hostname] += 1
    return [[f"agent={a.id}"] for a in chosen], infos
