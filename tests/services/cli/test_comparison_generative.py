"""`benchstack compare` on a fan-out of two generative endpoints: the rows the API builds
from stored generative runs (Workload.fan_out_figures) show the endpoint that differs,
output tokens/s and TTFT/TPOT with their 95 % intervals, and LoadGen's verdict; the CSV
keeps them."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

from services.api.fan_out import build_row
from services.cli.comparison import comparison_table, write_comparison_csv
from shared.db.evaluations import Evaluation
from shared.db.models import Run
from tests.services.cli.test_comparison import camel


def _figure(estimate: float, low: float | None, high: float | None, unit: str) -> dict[str, Any]:
    return {"estimate": estimate, "low": low, "high": high, "unit": unit,
            "reason": "" if low is not None else "too few requests"}  # fmt: skip


def generative_row(index: int, url: str, tokens_per_s: float, validity: str) -> dict[str, Any]:
    """One row as `compare` receives it: the API's row of a stored generative run."""
    document = {
        "kind": "generative",
        "options": {"engine": "openai", "model": "tiny", "scenario": "server", "prompts": 4},
        "engine": {"name": "openai", "model": "tiny", "url": url},
        "loadgen": {"validity": validity, "reasons": []},
        "figures": {
            "output_tokens_per_s": _figure(tokens_per_s, tokens_per_s * 0.9, tokens_per_s * 1.1,
                                           "tokens/s"),
            "ttft_p50": _figure(26.5, 25.0, 28.0, "ms"),
            "tpot_p50": _figure(7.7, None, None, "ms"),
        },
    }  # fmt: skip
    evaluation = Evaluation(
        id=f"e{index}", state="SUCCEEDED", reason="", agent_id=f"agent-{index}",
        framework="null", device="cpu", workload="generative", constraints={},
    )  # fmt: skip
    run = Run(
        id=f"r{index}", report={"kind": "generative", "generative": document}, metrics=[],
        environment={"hostname": f"host-{index}"}, framework_version="",
        samples_per_second=tokens_per_s / 8, validity=validity,
    )  # fmt: skip
    return {camel(k): v for k, v in asdict(build_row(evaluation, run, None)).items()}


def test_two_endpoints_compared_by_their_token_figures(tmp_path: Path) -> None:
    rows = [
        generative_row(0, "http://a:8000", 251.0, "VALID"),
        generative_row(1, "http://b:8000", 120.0, "INVALID"),
    ]
    comparison = {"id": "g", "model": "tiny:1", "scenario": "generative", "rows": rows}
    out = io.StringIO()
    Console(file=out, width=300, color_system=None).print(comparison_table(comparison))
    text = out.getvalue()
    assert "url=http://a:8000" in text and "url=http://b:8000" in text
    assert "Output tokens/s" in text and "251 tokens/s [225.9 - 276.1]" in text
    assert "TTFT p50" in text and "26.5 ms [25 - 28]" in text
    assert "INVALID" in text and "images/s" not in text
    written = tmp_path / "compare.csv"
    assert write_comparison_csv(comparison, written) == 2
    with written.open(newline="") as fh:
        first = next(csv.DictReader(fh))
    assert "url=http://a:8000" in first["workload_settings"].split(";")
    assert first["workload_figures"].startswith("Output tokens/s: 251 tokens/s")
