"""The generative workload's GraphQL surfaces (Workload.graphql_options_input and
graphql_result): the options a submission gives (``submitEvaluation(generative: ...)``,
validated by options.GenerativeOptions), and a generative run as the API shows it
(``Run.generative``): its settings, every token figure with its 95 % interval beside
LoadGen's, LoadGen's verdict with its reasons, the bounds and whether they were met, the
requests (failed ones by reason), stability, and the TTFT and TPOT CDFs. Read from the
document the run's report keeps (no file is read)."""

from __future__ import annotations

from typing import Any, cast

import strawberry
from strawberry.scalars import JSON

from services.core.stored_report import OutcomeReport, load_report
from services.workloads.generative.figures import UNITS
from services.workloads.generative.summary import (
    GENERATIVE_SETTINGS,
    bounds_met,
    figure_label,
    figure_of,
    setting_pairs,
)
from services.workloads.generative.workload import WORKLOAD
from services.workloads.graphql_fields import LIST_SIZE

# The most failure reasons and LoadGen reasons a run lists (its reasons are few; a
# failing server's are counted by reason, not by request).
MAX_REASONS = 50


@strawberry.input
class GenerativeInput:
    """What ``submitEvaluation(generative: ...)`` takes: options.GenerativeOptions' fields
    (its defaults; null: the option's own default or none)."""

    engine: str = "transformers"
    model: str = "tiny-llama"
    url: str | None = None
    api: str = "completions"
    served_model: str | None = None
    timeout_s: float = 60.0
    scenario: str = "single-stream"
    prompts: int = 16
    # A length distribution: "32", "16:64" (uniform), "normal:64:8" (see lengths.py).
    input_tokens: str = "32"
    output_tokens: str = "16"
    seed: int = 0
    batch_size: int = 1
    workers: int = 1
    min_duration_s: float = 2.0
    max_duration_s: float | None = None
    min_query_count: int | None = None
    target_qps: float | None = None
    # A preset named after an MLPerf LLM benchmark, each figure overridable.
    bounds: str | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    percentile: float | None = None
    device: str = "cpu"


@strawberry.type(name="GenerativeSetting")
class GenerativeSettingType:
    key: str
    label: str
    value: str


@strawberry.type(name="GenerativeFigure")
class GenerativeFigureType:
    name: str
    label: str
    unit: str
    estimate: float | None
    # Its 95 % interval (intervals.py); null with ``interval_reason`` when none.
    low: float | None
    high: float | None
    interval_reason: str
    # LoadGen's own figure of the same name, where it reports one.
    loadgen: float | None


@strawberry.type(name="GenerativeBounds")
class GenerativeBoundsType:
    ttft_ms: float
    tpot_ms: float
    percentile: float
    source: str
    # True: LoadGen judged the run VALID against them; False: it names a bound not met;
    # null: it could not judge them (INVALID for another reason, e.g. too few queries).
    met: bool | None


@strawberry.type(name="GenerativeFailure")
class GenerativeFailureType:
    reason: str
    count: int


@strawberry.type(name="GenerativeRequests")
class GenerativeRequestsType:
    issued: int
    completed: int
    failed: int
    failures: list[GenerativeFailureType] = strawberry.field(metadata={LIST_SIZE: MAX_REASONS})
    output_tokens: int
    prompt_tokens: int


@strawberry.type(name="GenerativeCdf")
class GenerativeCdfType:
    """One latency's empirical CDF (distributions.py): at most 500 points of all ``count``."""

    count: int
    values_ms: list[float] = strawberry.field(metadata={LIST_SIZE: 500})
    fractions: list[float] = strawberry.field(metadata={LIST_SIZE: 500})

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> GenerativeCdfType:
        data = data or {}
        return cls(
            count=int(data.get("count") or 0),
            values_ms=[float(v) for v in data.get("values_ms") or []],
            fractions=[float(f) for f in data.get("fractions") or []],
        )


def _figures(document: dict[str, Any]) -> list[GenerativeFigureType]:
    theirs = (document.get("loadgen") or {}).get("figures") or {}
    shown = []
    for name in UNITS:
        f = figure_of(document, name)
        shown.append(
            GenerativeFigureType(
                name=name,
                label=figure_label(name),
                unit=f["unit"],
                estimate=f["estimate"],
                low=f["low"],
                high=f["high"],
                interval_reason=f["reason"],
                loadgen=theirs.get(name),
            )
        )
    return shown


def _requests(document: dict[str, Any]) -> GenerativeRequestsType:
    requests = document.get("requests") or {}
    failures = list((requests.get("failures") or {}).items())[:MAX_REASONS]
    return GenerativeRequestsType(
        issued=int(requests.get("issued") or 0),
        completed=int(requests.get("completed") or 0),
        failed=int(requests.get("failed") or 0),
        failures=[GenerativeFailureType(reason=str(r), count=int(n)) for r, n in failures],
        output_tokens=int(requests.get("output_tokens") or 0),
        prompt_tokens=int(requests.get("prompt_tokens") or 0),
    )


def _bounds(document: dict[str, Any]) -> GenerativeBoundsType | None:
    bounds = document.get("bounds")
    if not bounds:
        return None
    return GenerativeBoundsType(
        ttft_ms=float(bounds["ttft_ms"]),
        tpot_ms=float(bounds["tpot_ms"]),
        percentile=float(bounds["percentile"]),
        source=str(bounds.get("source") or ""),
        met=bounds_met(document),
    )


@strawberry.type(name="Generative")
class GenerativeType:
    settings: list[GenerativeSettingType] = strawberry.field(
        metadata={LIST_SIZE: len(GENERATIVE_SETTINGS)}
    )
    figures: list[GenerativeFigureType] = strawberry.field(metadata={LIST_SIZE: len(UNITS)})
    # How the intervals were made (intervals.RULE).
    interval_rule: str
    # LoadGen's verdict (VALID, INVALID) and every reason it gives.
    validity: str
    validity_reasons: list[str] = strawberry.field(metadata={LIST_SIZE: MAX_REASONS})
    bounds: GenerativeBoundsType | None
    requests: GenerativeRequestsType
    stability: str
    stability_reasons: list[str] = strawberry.field(metadata={LIST_SIZE: MAX_REASONS})
    # The Server run's arrival rate (requests/s); null for the other scenarios.
    target_qps: float | None
    # Where the prompts came from and their token counts.
    prompts: JSON
    # The engine: its name, the served model, the endpoint and what the server reported.
    engine: JSON
    ttft_cdf: GenerativeCdfType
    tpot_cdf: GenerativeCdfType

    @classmethod
    def from_report(cls, report: dict[str, Any] | None) -> GenerativeType | None:
        """The generative run a stored report holds (its "generative" section); else None."""
        stored = load_report(report)
        if not isinstance(stored, OutcomeReport) or stored.kind != WORKLOAD.name:
            return None
        d = stored.document
        verdict, stability = d.get("loadgen") or {}, d.get("stability") or {}
        distributions = d.get("distributions") or {}
        target = d.get("target_qps")
        return cls(
            settings=[
                GenerativeSettingType(key=k, label=lbl, value=v) for k, lbl, v in setting_pairs(d)
            ],
            figures=_figures(d),
            interval_rule=str(d.get("rule") or ""),
            validity=str(verdict.get("validity") or "MISSING"),
            validity_reasons=[str(r) for r in verdict.get("reasons") or []][:MAX_REASONS],
            bounds=_bounds(d),
            requests=_requests(d),
            stability=str(stability.get("verdict") or "UNKNOWN"),
            stability_reasons=[str(r) for r in stability.get("reasons") or []][:MAX_REASONS],
            target_qps=None if target is None else float(target),
            prompts=cast(JSON, {k: v for k, v in (d.get("prompts") or {}).items()}),
            engine=cast(JSON, d.get("engine") or {}),
            ttft_cdf=GenerativeCdfType.from_dict(distributions.get("ttft")),
            tpot_cdf=GenerativeCdfType.from_dict(distributions.get("tpot")),
        )
