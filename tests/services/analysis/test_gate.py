"""The gate's verdicts on stored reports: 0 when nothing moved, 1 when slower beyond the
bound and the noise, 2 with a remedy when it cannot say (BUSY, too noisy, too few repeats);
its Markdown is a table and its JUnit parses."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from services.analysis.gate import CANNOT_SAY, PASS, SLOWER, judge, parse_fraction
from services.analysis.gate_report import to_junit, to_markdown


def _report(sps: float, *, run_id: str, busy: bool = False, spread: float = 0.0) -> dict[str, Any]:
    """An Offline report of five measurement windows around ``sps`` samples/s."""
    windows = [sps * (1 + spread * s) for s in (0.0, 1.0, -1.0, 1.0, -1.0)]
    return {
        "run_id": run_id,
        "model": {"name": "tiny-cnn"},
        "performance": {
            "scenario": "Offline",
            "samples_per_second": sps,
            "latency": {"mean_ns": 1e6, "percentiles_ns": {"p50": 1e6, "p90": 1e6, "p99": 1e6}},
            "validity": {"result": "VALID"},
        },
        "stability": {
            "verdict": "STABLE",
            "windows": [{"samples_per_second": v, "median_latency_ms": 1.0} for v in windows],
        },
        "host": {"busy": busy, "load": {"reason": "other processes used 40 % of the CPUs"}},
    }


BASE = _report(200.0, run_id="base0000")


def test_the_same_speed_passes_and_a_slower_one_fails() -> None:
    same = judge("tiny-cnn", [BASE], [_report(198.0, run_id="curr0000")])
    assert same.exit_code == PASS and same.figures[0].outcome == "pass"
    slower = judge("tiny-cnn", [BASE], [_report(150.0, run_id="curr0001")])
    assert slower.exit_code == SLOWER
    assert slower.figures[0].slowdown == pytest.approx(0.25)
    assert "25.0% slower" in slower.figures[0].reason
    # Slower beyond the noise but within a generous bound: allowed.
    allowed = judge("tiny-cnn", [BASE], [_report(180.0, run_id="c")], max_slowdown=0.2)
    assert allowed.exit_code == PASS and "within the allowed 20.0%" in allowed.figures[0].reason


def test_a_busy_current_run_cannot_be_judged() -> None:
    result = judge("tiny-cnn", [BASE], [_report(100.0, run_id="busy0000", busy=True)])
    assert result.exit_code == CANNOT_SAY and not result.figures
    assert result.reasons == ["current: every run was measured on a BUSY host"]
    assert "quiet host" in result.remedies[0]
    # A BUSY repeat among quiet ones is left out, and said so.
    mixed = [_report(100.0, run_id="busy0000", busy=True), _report(199.0, run_id="quiet000")]
    kept = judge("tiny-cnn", [BASE], mixed)
    assert kept.exit_code == PASS and "BUSY run(s) busy0000 left out" in kept.notes[0]


def test_too_noisy_or_too_few_windows_cannot_say_and_says_what_would() -> None:
    noisy = judge("tiny-cnn", [BASE], [_report(190.0, run_id="noisy000", spread=0.3)])
    assert noisy.exit_code == CANNOT_SAY and noisy.figures[0].outcome == "cannot say"
    assert "wider than the allowed 5.0% slowdown" in noisy.reasons[0]
    assert "--repeats" in noisy.remedies[0]
    short = _report(200.0, run_id="short000")
    short["stability"]["windows"] = short["stability"]["windows"][:2]
    few = judge("tiny-cnn", [BASE], [short])
    assert few.exit_code == CANNOT_SAY and few.reasons[0].startswith("too few repeats")
    assert "--repeats 3" in few.remedies[0]


def test_a_baseline_group_adds_its_own_spread() -> None:
    group = [_report(v, run_id=f"base000{i}") for i, v in enumerate((200.0, 170.0, 230.0))]
    result = judge("tiny-cnn", group, [_report(190.0, run_id="curr0000")])
    assert result.figures[0].baseline == 200.0  # the member with the median figure
    assert result.figures[0].band > 0.2 and result.exit_code == CANNOT_SAY


def test_markdown_is_a_table_and_junit_parses() -> None:
    slower = judge("tiny-cnn", [BASE], [_report(150.0, run_id="curr0001")])
    markdown = to_markdown(slower)
    assert "| figure | baseline | current | change | noise band | outcome |" in markdown
    assert "| samples_per_second (samples/s) | 200.000 | 150.000 | -25.0% |" in markdown
    suite = ET.fromstring(to_junit(slower))
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "0")
    assert suite.find("testcase/failure") is not None
    busy = judge("tiny-cnn", [BASE], [_report(100.0, run_id="b", busy=True)])
    skipped = ET.fromstring(to_junit(busy))
    assert skipped.get("skipped") == "1" and skipped.find("testcase/skipped") is not None
    assert "**Why it cannot say**" in to_markdown(busy)


@pytest.mark.parametrize(("text", "value"), [("5%", 0.05), ("0.1", 0.1), (" 12.5% ", 0.125)])
def test_max_slowdown_reads_percent_or_fraction(text: str, value: float) -> None:
    assert parse_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["five", "100%", "-1%"])
def test_max_slowdown_refuses_the_rest(text: str) -> None:
    with pytest.raises(ValueError, match="--max-slowdown"):
        parse_fraction(text)


def _server(p99_ms: float, *, run_id: str, threads: int = 2) -> dict[str, Any]:
    """A Server report at 100 QPS (its samples/s is the rate asked for) with ``p99_ms``."""
    report = _report(100.0, run_id=run_id)
    report["performance"]["scenario"] = "Server"
    report["performance"]["latency"]["percentiles_ns"]["p99"] = p99_ms * 1e6
    report["stability"]["windows"] = [
        {"samples_per_second": 100.0, "median_latency_ms": p99_ms / 2} for _ in range(5)
    ]
    report["settings"] = {"backend_options": {"intra_op_threads": threads}}
    return report


def test_server_judges_its_p99_and_names_the_settings_that_changed() -> None:
    # The same samples/s (the rate asked for), a p99 twice as long with one thread.
    result = judge("tiny-cnn", [_server(10.0, run_id="b")], [_server(20.0, run_id="c", threads=1)])
    assert [f.name for f in result.figures] == ["latency_p99"]
    assert result.exit_code == SLOWER and result.figures[0].slowdown == pytest.approx(1.0)
    assert "settings changed: threads: 2 -> 1" in result.notes


def test_another_scenario_cannot_be_compared() -> None:
    result = judge("tiny-cnn", [BASE], [_server(10.0, run_id="c")])
    assert result.exit_code == CANNOT_SAY and not result.figures
    assert result.reasons == ["scenario: baseline Offline, current Server: not comparable"]
