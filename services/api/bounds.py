"""The size and time bounds of a submission, each a setting (shared/settings.py).

A number a client sends decides how much memory or time a worker spends: a resize to
100000 pixels, a million-wide null output, a billion queries. Every such number is
checked here against its limit before anything is stored, and each refusal names the
field, the limit and the setting that raises it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from services.core.manifest import ModelManifest
from services.core.manifest_sections import CenterCropStep, ResizeStep
from services.core.scenario import ScenarioConfig
from services.inference.backends.spec import BackendSpec
from shared.settings import Settings

# LoadGen's random seeds are unsigned 64-bit integers.
MAX_LOADGEN_SEED = 2**64 - 1


@dataclass(frozen=True)
class OutOfBounds:
    """``field`` at fault; ``message`` names it, the value and the limit."""

    field: str
    message: str
    accepted: str


def _setting(name: str) -> str:
    return f"BENCHSTACK_{name.upper()}"


def manifest_size_problems(manifest: ModelManifest, settings: Settings) -> list[str]:
    """Input shapes and resize/crop sides a worker would allocate for, over their limits."""
    side, budget = settings.max_image_side, settings.max_sample_elements
    problems: list[str] = []
    for i, spec in enumerate(manifest.inputs):
        field = f"inputs[{i}].shape"
        big = [d for d in spec.shape if d > side]
        if big:
            problems.append(
                f"{field}: {big[0]} is above the limit of {side} per dimension "
                f"({_setting('max_image_side')})"
            )
        elements = math.prod(spec.shape)
        if elements > budget:
            problems.append(
                f"{field}: {elements} elements per sample is above the limit of {budget} "
                f"({_setting('max_sample_elements')})"
            )
        for j, step in enumerate(spec.steps):
            if isinstance(step, ResizeStep | CenterCropStep):
                sides = (step.size,) if isinstance(step.size, int) else step.size
                if any(s > side for s in sides):
                    problems.append(
                        f"inputs[{i}].steps[{j}].{step.op}.size: {max(sides)} is above the "
                        f"limit of {side} pixels per side ({_setting('max_image_side')})"
                    )
    return problems


def _number(
    field: str, value: Any, low: float, high: float, *, integer: bool, setting: str = ""
) -> OutOfBounds | None:
    kind = "an integer" if integer else "a number"
    accepted = f"{kind} from {low:g} to {high:g}" + (f" ({_setting(setting)})" if setting else "")
    valid_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not valid_type:
        return OutOfBounds(
            field, f"{field}: must be {kind} (got {value!r}); accepted: {accepted}", accepted
        )
    if not math.isfinite(value) or not low <= value <= high:
        return OutOfBounds(
            field, f"{field}: {value!r} is out of range; accepted: {accepted}", accepted
        )
    return None


def _field_bounds(metadata: list[Any]) -> tuple[float, float]:
    """The (ge, le) an options model's Field declares: 0 and infinity where it has none."""
    low, high = 0.0, math.inf
    for constraint in metadata:  # annotated_types' Ge and Le, among others
        low = float(getattr(constraint, "ge", low))
        high = float(getattr(constraint, "le", high))
    return low, high


def settings_bounds_problem(
    options: dict[str, Any], spec: BackendSpec, settings: Settings
) -> OutOfBounds | None:
    """The options the spec's ``settings_bounds`` names (the null backend's service time,
    outputs, fail_every): each a size or a time the worker spends, its upper bound a
    deployment setting or the options model's own. The lower bound and the kind (integer
    or number) are the options model's; the message names both ends and the setting."""
    for key, setting in spec.settings_bounds.items():
        if key in options:
            info = spec.options.model_fields[key]
            low, own_high = _field_bounds(info.metadata)
            high = getattr(settings, setting) if setting else own_high
            integer = info.annotation is int
            field = f"backendOptions.{key}"
            problem = _number(field, options[key], low, high, integer=integer, setting=setting)
            if problem is not None:
                return problem
    return None


def scenario_problem(scenario: ScenarioConfig, settings: Settings) -> OutOfBounds | None:
    """Query counts, rates, latencies and seeds within their limits; durations are checked
    against MAX_RUN_SECONDS by submission_checks.run_cap_problem."""
    run_ms = settings.max_run_seconds * 1000.0
    queries, per_query = settings.max_query_count, settings.max_samples_per_query
    checks: list[tuple[str, Any, float, float, bool, str]] = [
        ("min_query_count", scenario.min_query_count, 1, queries, True, "max_query_count"),
        ("max_query_count", scenario.max_query_count, 1, queries, True, "max_query_count"),
        (
            "samples_per_query",
            scenario.samples_per_query,
            1,
            per_query,
            True,
            "max_samples_per_query",
        ),
        (
            "performance_sample_count",
            scenario.performance_sample_count,
            1,
            settings.max_samples,
            True,
            "max_samples",
        ),
        ("target_qps", scenario.target_qps, 0, settings.max_target_qps, False, "max_target_qps"),
        # No latency can be longer than the run that measures it.
        ("target_latency_ms", scenario.target_latency_ms, 0, run_ms, False, "max_run_seconds"),
        ("expected_latency_ms", scenario.expected_latency_ms, 0, run_ms, False, "max_run_seconds"),
        ("qsl_rng_seed", scenario.qsl_rng_seed, 0, MAX_LOADGEN_SEED, True, ""),
        ("sample_index_rng_seed", scenario.sample_index_rng_seed, 0, MAX_LOADGEN_SEED, True, ""),
        ("schedule_rng_seed", scenario.schedule_rng_seed, 0, MAX_LOADGEN_SEED, True, ""),
    ]
    for name, value, low, high, integer, setting in checks:
        if value is None:
            continue
        problem = _number(f"settings.{name}", value, low, high, integer=integer, setting=setting)
        if problem is not None:
            return problem
    return None


def constraint_terms_problem(texts: list[str], settings: Settings) -> OutOfBounds | None:
    """Each term is parsed and matched against every live agent: bound their number and length."""
    most, longest = settings.max_constraint_terms, settings.max_constraint_term_chars
    if len(texts) > most:
        accepted = f"at most {most} terms ({_setting('max_constraint_terms')})"
        return OutOfBounds(
            "constraints.require",
            f"constraints.require: {len(texts)} terms; accepted: {accepted}",
            accepted,
        )
    for i, text in enumerate(texts):
        if len(text) > longest:
            accepted = (
                f"at most {longest} characters a term ({_setting('max_constraint_term_chars')})"
            )
            return OutOfBounds(
                f"constraints.require[{i}]",
                f"constraints.require[{i}]: {len(text)} characters; accepted: {accepted}",
                accepted,
            )
    return None
