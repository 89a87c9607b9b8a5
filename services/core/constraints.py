"""The agent constraint language: a list of short terms, each checked against what a live
agent advertises. Terms are matched by one regular expression and compared as typed
values; nothing in a term is ever evaluated as code.

    onnxruntime>=1.20     the run's framework, with a PEP 440 specifier ("=" means "==")
    onnxruntime           the run's framework, any version
    arch=x86_64           CPU architecture (amd64 and arm64 are read as x86_64 and aarch64)
    gpu  /  !gpu          the agent's machine has / has no NVIDIA GPU (seen through NVML)
    gpu=A100              a GPU whose name contains "A100" (case-insensitive)
    device=cuda           the agent's device (the queue it consumes)
    host=node-3           the agent's hostname (also "hostname=")
    memory>=16GiB         total RAM; units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB
    threads=2             the worker's intra-op threads (--threads; 0 = chosen per run)
    cores>=8              logical CPU cores
    agent=ID              one agent, by id (a fan-out pins each of its evaluations so)

Numbers take =, !=, >, >=, <, <=; names take = and !=. All terms must hold (AND).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet


@dataclass(frozen=True)
class AgentView:
    """What routing needs to know about a live agent (one framework on one worker)."""

    id: str
    hostname: str
    queue: str
    framework: str
    framework_version: str
    device: str
    arch: str = ""
    gpus: tuple[str, ...] = ()
    memory_bytes: int = 0
    logical_cores: int = 0
    # The worker's --threads; 0 leaves the framework's own default.
    threads: int = 0
    # The queue only this agent consumes; empty for agents registered before it existed.
    direct_queue: str = ""


class ConstraintError(ValueError):
    """A term is not part of the language; ``index`` is its position in the list."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True)
class Term:
    # The term as written (stripped); errors quote it.
    text: str
    # framework, arch, gpu, device, hostname, memory, threads, cores or agent.
    key: str
    op: str = ""
    value: Any = None
    # Framework terms only: the framework named and its version specifier.
    framework: str = ""
    specifier: str = ""
    # Why the term binds, for messages ("required by manifest resnet18:1.0.0").
    source: str = ""

    def holds(self, agent: AgentView) -> bool:
        return _CHECKS[self.key](self, agent)

    def seen(self, agent: AgentView) -> str:
        """The agent's value for this term's key, as the error message shows it."""
        return _SEEN[self.key](agent)


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_NAME_OPS = ("=", "==", "!=")
_TERM = re.compile(
    r"^(?P<neg>!)?(?P<key>[A-Za-z][A-Za-z0-9_-]*)\s*"
    r"(?:(?P<op>===|==|!=|>=|<=|~=|=|>|<)\s*(?P<value>\S.*))?$"
)
_SIZE = re.compile(r"^(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt]i?b|b)?$", re.IGNORECASE)
_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
_KEY_ALIASES = {"host": "hostname", "mem": "memory", "architecture": "arch"}
KEYS = ("arch", "gpu", "device", "host", "memory", "threads", "cores", "agent")


def _compare(term: Term, have: Any) -> bool:
    return _OPS[term.op](have, term.value)


def _gpu_holds(term: Term, agent: AgentView) -> bool:
    if term.op == "absent":
        return not agent.gpus
    if term.op == "present":
        return bool(agent.gpus)
    return any(str(term.value).lower() in name.lower() for name in agent.gpus)


def _framework_holds(term: Term, agent: AgentView) -> bool:
    if agent.framework != term.framework:
        return False
    if not term.specifier:
        return True
    try:
        return SpecifierSet(term.specifier).contains(agent.framework_version, prereleases=True)
    except Exception:  # an unparsable agent version ("unknown") satisfies no specifier
        return False


_CHECKS: dict[str, Callable[[Term, AgentView], bool]] = {
    "framework": _framework_holds,
    "arch": lambda t, a: _compare(t, a.arch),
    "gpu": _gpu_holds,
    "device": lambda t, a: _compare(t, a.device),
    "hostname": lambda t, a: _compare(t, a.hostname),
    "memory": lambda t, a: _compare(t, a.memory_bytes),
    "threads": lambda t, a: _compare(t, a.threads),
    "cores": lambda t, a: _compare(t, a.logical_cores),
    "agent": lambda t, a: _compare(t, a.id),
}
_SEEN: dict[str, Callable[[AgentView], str]] = {
    "framework": lambda a: f"{a.framework} {a.framework_version}",
    "arch": lambda a: a.arch or "unknown",
    "gpu": lambda a: f"{a.hostname}: {', '.join(a.gpus) or 'no GPU'}",
    "device": lambda a: a.device,
    "hostname": lambda a: a.hostname,
    "memory": lambda a: f"{a.hostname}: {a.memory_bytes / 2**30:.1f} GiB",
    "threads": lambda a: str(a.threads),
    "cores": lambda a: f"{a.hostname}: {a.logical_cores}",
    "agent": lambda a: a.id,
}


def _number(text: str, *, key: str) -> int:
    if key == "memory":
        match = _SIZE.match(text)
        if not match:
            raise ValueError("a size such as 16GiB or 512MB")
        unit = (match["unit"] or "b").lower()
        return int(float(match["number"]) * _UNITS[unit])
    if not text.isdigit():
        raise ValueError("a whole number such as 4")
    return int(text)


def parse_term(text: str, *, frameworks: Sequence[str], index: int = 0, source: str = "") -> Term:
    """One term; raises ConstraintError naming the term and what would be accepted."""
    term = text.strip()
    where = f"constraints.require[{index}]"
    match = _TERM.match(term)
    if not match:
        raise ConstraintError(
            index, f"{where}: {term!r} is not a term such as 'arch=x86_64' or 'torch>=2.1'"
        )
    negated, op, value = bool(match["neg"]), match["op"] or "", (match["value"] or "").strip()
    key = match["key"].lower()
    key = _KEY_ALIASES.get(key, key)
    if key in frameworks:
        if negated:
            raise ConstraintError(index, f"{where}: {term!r}: a framework cannot be negated")
        specifier = f"=={value}" if op == "=" else f"{op}{value}"
        try:
            SpecifierSet(specifier)
        except InvalidSpecifier:
            raise ConstraintError(
                index,
                f"{where}: {term!r}: {specifier!r} is not a version specifier "
                "such as '>=1.20' or '>=2.1,<3'",
            ) from None
        return Term(term, "framework", framework=key, specifier=specifier, source=source)
    if key == "gpu":
        if negated and op:
            raise ConstraintError(index, f"{where}: {term!r}: write '!gpu' or 'gpu=NAME'")
        if not op:
            return Term(term, "gpu", "absent" if negated else "present", source=source)
        if op not in ("=", "=="):
            raise ConstraintError(index, f"{where}: {term!r}: gpu takes '=' and a GPU name")
        return Term(term, "gpu", "name", value, source=source)
    if key not in _CHECKS or key == "framework":
        raise ConstraintError(
            index,
            f"{where}: unknown key in {term!r}; accepted: {', '.join(KEYS)}, or a framework "
            f"({', '.join(frameworks)}) with an optional specifier such as 'onnxruntime>=1.20'",
        )
    if negated or not op:
        raise ConstraintError(index, f"{where}: {term!r}: {key} needs an operator and a value")
    numeric = key in ("memory", "threads", "cores")
    if op not in _OPS or (not numeric and op not in _NAME_OPS):
        accepted = ", ".join(_OPS if numeric else _NAME_OPS)
        raise ConstraintError(index, f"{where}: {term!r}: {key} accepts {accepted}")
    parsed: Any = value
    if numeric:
        try:
            parsed = _number(value, key=key)
        except ValueError as exc:
            raise ConstraintError(index, f"{where}: {term!r}: {key} needs {exc}") from None
    elif key == "arch":
        parsed = _ARCH_ALIASES.get(value.lower(), value.lower())
    return Term(term, key, op, parsed, source=source)


def parse_terms(texts: Sequence[str], *, frameworks: Sequence[str]) -> list[Term]:
    return [parse_term(t, frameworks=frameworks, index=i) for i, t in enumerate(texts)]


@dataclass(frozen=True)
class Requirement:
    """Everything an agent must satisfy to receive an evaluation."""

    framework: str
    device: str = "cpu"
    # Checked in this order after framework and device, so a miss names the first unmet.
    terms: tuple[Term, ...] = field(default_factory=tuple)


def framework_named(terms: Sequence[Term]) -> str | None:
    """The framework the terms ask for; ValueError when they name two."""
    names = sorted({t.framework for t in terms if t.key == "framework"})
    if len(names) > 1:
        raise ValueError(f"constraints.require: names two frameworks ({', '.join(names)})")
    return names[0] if names else None


def device_named(terms: Sequence[Term]) -> str | None:
    devices = sorted({str(t.value) for t in terms if t.key == "device" and t.op in ("=", "==")})
    if len(devices) > 1:
        raise ValueError(f"constraints.require: names two devices ({', '.join(devices)})")
    return devices[0] if devices else None


def stored_terms(constraints: dict[str, Any], framework: str) -> list[str]:
    """The terms an evaluation row holds; rows written before the language existed kept
    ``hostname`` and ``framework_version`` as keys, read here as terms."""
    texts = [str(t) for t in constraints.get("require", [])]
    if constraints.get("hostname"):
        texts.append(f"host={constraints['hostname']}")
    if constraints.get("framework_version"):
        texts.append(f"{framework}{constraints['framework_version']}")
    return texts


def requirement(
    *,
    framework: str,
    device: str,
    texts: Sequence[str],
    frameworks: Sequence[str],
    manifest_framework: str = "",
    manifest_version: str = "",
    manifest_ref: str = "",
) -> Requirement:
    """The full requirement: the manifest's framework constraint binds agents of its own
    framework (not e.g. the null backend), and the submission's terms come after it."""
    terms: list[Term] = []
    if manifest_version and framework == manifest_framework:
        terms.append(
            parse_term(
                f"{framework}{manifest_version}",
                frameworks=[framework],
                source=f"required by manifest {manifest_ref}" if manifest_ref else "manifest",
            )
        )
    terms += parse_terms(texts, frameworks=frameworks)
    return Requirement(framework=framework, device=device, terms=tuple(terms))
