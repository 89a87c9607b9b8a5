"""The compare page's "beyond the intervals" rule, run in Chromium as the page runs it
(format.js), against the CLI's (services/cli/comparison): the same verdict for the same
runs, and none for a run LoadGen did not judge VALID, whatever interval it carries."""

from __future__ import annotations

from typing import Any

import pytest

from services.cli.comparison import pair_verdicts

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

APART = ({"low": 10.0, "high": 11.0}, {"low": 20.0, "high": 22.0})
OVERLAPPING = ({"low": 10.0, "high": 15.0}, {"low": 14.0, "high": 22.0})


def page_verdict(page: Any, runs: list[dict[str, Any]]) -> str:
    verdict: str = page.evaluate(
        """async (runs) => {
          const f = await import("/static/js/format.js");
          const [a, b] = runs.map((run) => f.judgedIntervalOf(run, "samples_per_second"));
          return f.differVerdict(a, b)[0];
        }""",
        runs,
    )
    return verdict


def cli_verdict(runs: list[dict[str, Any]]) -> str:
    rows = [
        {
            "state": "SUCCEEDED",
            "validity": run["validity"],
            "agentId": f"agent-{index}",
            "samplesPerSecond": (run["confidence"]["samplesPerSecond"]["low"] or 0) + 0.5,
            "samplesPerSecondLow": run["confidence"]["samplesPerSecond"]["low"],
            "samplesPerSecondHigh": run["confidence"]["samplesPerSecond"]["high"],
            "latencyP99Ms": None,
        }
        for index, run in enumerate(runs)
    ]
    (throughput,) = [v for v in pair_verdicts({"rows": rows}) if v["figure"] == "samples/s"]
    return throughput["verdict"]


@pytest.mark.parametrize(
    ("validities", "intervals", "expected"),
    [
        (("VALID", "VALID"), APART, "differ"),
        (("VALID", "VALID"), OVERLAPPING, "within their intervals"),
        (("INVALID", "VALID"), APART, "cannot say"),
        (("VALID", "INVALID"), APART, "cannot say"),
    ],
)
def test_the_page_judges_two_runs_as_the_cli_does(
    page: Any,
    validities: tuple[str, str],
    intervals: tuple[dict[str, float], dict[str, float]],
    expected: str,
) -> None:
    runs = [
        {"validity": validity, "confidence": {"samplesPerSecond": interval}}
        for validity, interval in zip(validities, intervals, strict=True)
    ]
    page.goto("/")
    assert page_verdict(page, runs) == expected
    assert cli_verdict(runs) == expected
