"""`advise` on generative runs (Workload.priced_rate): cost per million output tokens from
the machine's price per hour and the fastest run judged VALID against its own TTFT/TPOT
bounds; a run LoadGen did not judge so is not quoted, and says why."""

from __future__ import annotations

from typing import Any

import pytest

from services.analysis.advice import advise, cost_per_million


def _generative(
    run_id: str, tokens_per_s: float, validity: str, *, price: float | None, url: str
) -> dict[str, Any]:
    """A stored generative run's report, as its outcome.py stores one."""
    settings = {"price_per_hour": price} if price is not None else {}
    document = {
        "kind": "generative",
        "options": {"engine": "openai", "model": "tiny", "api": "completions",
                    "batch_size": 1, "workers": 1, "scenario": "server"},
        "engine": {"name": "openai", "model": "tiny", "url": url},
        "bounds": {"ttft_ms": 500.0, "tpot_ms": 30.0, "percentile": 99.0, "source": "given"},
        "loadgen": {"validity": validity,
                    "reasons": [] if validity == "VALID" else ["TTFT constrain not met"]},
        "figures": {
            "output_tokens_per_s": {"estimate": tokens_per_s, "low": None, "high": None,
                                    "reason": "few", "unit": "tokens/s"},
            "requests_per_s": {"estimate": tokens_per_s / 8, "low": None, "high": None,
                               "reason": "few", "unit": "requests/s"},
        },
        "agent": {"id": "gpu-box/inference.null.cpu/41", "settings": settings},
    }  # fmt: skip
    return {"kind": "generative", "run_id": run_id, "generative": document, "logs": {}}


def test_cost_per_million_output_tokens_from_the_fastest_judged_run() -> None:
    reports = [
        _generative("fast-invalid", 900.0, "INVALID", price=3.6, url="http://a:8000"),
        _generative("judged", 100.0, "VALID", price=3.6, url="http://a:8000"),
        _generative("slower", 50.0, "VALID", price=3.6, url="http://a:8000"),
    ]
    advice = advise(reports, model="tiny", latency_bound_ms=500.0)
    (system,) = advice.systems
    assert system.status == "meets the bound" and system.cost_unit == "output tokens"
    assert system.rate_per_second == 100.0  # the INVALID run's 900 is not quoted
    # 3.6 per hour / (100 tokens/s x 3600 s) x 1e6 = 10 per million output tokens.
    assert system.cost_per_million == pytest.approx(10.0)
    assert system.cost_per_million == pytest.approx(cost_per_million(3.6, 100.0))
    assert advice.cheapest == system.system
    assert "10 per million output tokens" in advice.conclusion


def test_a_price_declared_now_wins_and_an_unjudged_endpoint_says_why() -> None:
    reports = [
        _generative("a", 200.0, "VALID", price=None, url="http://a:8000"),
        _generative("b", 400.0, "INVALID", price=1.0, url="http://b:8000"),
    ]
    advice = advise(
        reports, model="tiny", latency_bound_ms=500.0, prices={"gpu-box/inference.null.cpu": 7.2}
    )
    by_url = {s.settings["url"]: s for s in advice.systems}
    assert by_url["http://a:8000"].cost_per_million == pytest.approx(7.2 / (200 * 3600) * 1e6)
    unjudged = by_url["http://b:8000"]
    assert unjudged.status == "no judged run" and unjudged.cost_per_million is None
    assert unjudged.notes == ["LoadGen INVALID: TTFT constrain not met"]


def test_the_cli_table_says_what_a_million_costs() -> None:
    import io

    from rich.console import Console

    from services.cli.commands.advise import advice_table

    reports = [_generative("judged", 100.0, "VALID", price=3.6, url="http://a:8000")]
    advice = advise(reports, model="tiny", latency_bound_ms=500.0).to_dict()
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(advice_table(advice))
    assert "10 out. tok." in out.getvalue()
