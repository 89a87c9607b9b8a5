"""The gate's verdict for people and CI systems: a Markdown summary for a pull-request
comment and a JUnit XML file (one test case per judged figure, one per reason it cannot
say), which CI systems show as passed, failed and skipped tests."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from services.analysis.gate import CANNOT_SAY, SLOWER, GateResult

HEADLINES = {
    0: "no slowdown beyond the allowed bound and the noise",
    SLOWER: "slower than the baseline",
    CANNOT_SAY: "cannot say",
}
ICONS = {"pass": "✅", "slower": "❌", "cannot say": "⚠️"}


def _runs(ids: list[str]) -> str:
    return ", ".join(f"`{run[:8]}`" for run in ids) or "-"


def _cell(text: str) -> str:
    """A table cell: a pipe would end it early."""
    return text.replace("|", "\\|")


def to_markdown(result: GateResult) -> str:
    lines = [
        f"### benchstack gate: {ICONS[result.outcome]} {HEADLINES[result.exit_code]}",
        "",
        f"Model `{result.model}`; baseline {_runs(result.baseline_runs)}, current "
        f"{_runs(result.current_runs)}; allowed slowdown {result.max_slowdown:.1%}.",
        "",
    ]
    if result.figures:
        lines += [
            "| figure | baseline | current | change | noise band | outcome |",
            "|---|---:|---:|---:|---:|---|",
        ]
        lines += [
            f"| {f.name} ({f.unit}) | {f.baseline:.3f} | {f.current:.3f} | {f.change:+.1%} "
            f"| ±{f.band:.1%} | {ICONS[f.outcome]} {_cell(f.reason)} |"
            for f in result.figures
        ]
        lines.append("")
    for title, items in (
        ("Why it cannot say", result.reasons),
        ("What would make it judgeable", result.remedies),
        ("Notes", result.notes),
        ("Environment changes since the baseline", result.environment_diff),
    ):
        if items:
            lines += [f"**{title}**", "", *(f"- {_cell(item)}" for item in items), ""]
    return "\n".join(lines)


def to_junit(result: GateResult) -> str:
    """A JUnit XML document: a slower figure fails, a figure or reason it cannot judge is
    skipped (CI shows it without failing on it; the exit code 2 says the rest)."""
    suite = ET.Element("testsuite", name=f"benchstack gate {result.model}")
    failures = skipped = 0
    for figure in result.figures:
        case = ET.SubElement(suite, "testcase", classname="benchstack.gate", name=figure.name)
        if figure.outcome == "slower":
            failures += 1
            failure = ET.SubElement(case, "failure", message=figure.reason)
            unit = figure.unit
            failure.text = (
                f"baseline {figure.baseline:.3f} {unit}, current {figure.current:.3f} {unit}"
            )
        elif figure.outcome == "cannot say":
            skipped += 1
            ET.SubElement(case, "skipped", message=figure.reason)
    judged = {f"{f.name}: {f.reason}" for f in result.figures}
    for reason in (r for r in result.reasons if r not in judged):
        case = ET.SubElement(suite, "testcase", classname="benchstack.gate", name="judgeable")
        skipped += 1
        ET.SubElement(case, "skipped", message=reason).text = "; ".join(result.remedies)
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
