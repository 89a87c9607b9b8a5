"""A stored report is read through services/core/stored_report.py (``load_report``), never by
string keys: this counts the reads of a report section by key (``x["performance"]``,
``x.get("stability")``, ...) left in services/, file by file, against an allowlist that
may only shrink. A grep cannot tell a report from another dict holding a key of the same
name, so the allowlist also holds such reads, each with the reason it is not a report's."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# The report's sections (RunReport.to_dict's keys that hold a section or a verdict).
SECTIONS = (
    "performance", "stability", "confidence", "accuracy", "sut_latency", "warm_up",
    "failed_samples", "preprocessing", "timings", "profile", "log_keys", "hints",
    "settings", "environment",
)  # fmt: skip
READ = re.compile(r"""(?:\[|\.get\()\s*["'](""" + "|".join(SECTIONS) + r""")["']""")

# path -> (reads left, why each is not converted).
ALLOWED: dict[str, tuple[int, str]] = {
    # Not a run report: the same key names in another dict.
    "services/workloads/training/outcome.py": (1, "the training outcome document's settings"),
    "services/workloads/training/summary.py": (1, "the training outcome document's settings"),
    "services/workloads/generative/render.py": (1, "the generative outcome document's own"),
    "services/workloads/generative/find_peak.py": (1, "the generative outcome document's own"),
    "services/workloads/generative/sweep.py": (1, "the generative outcome document's own"),
    "services/workloads/generative/graphql_types.py": (1, "the generative outcome document's own"),
    "services/aggregator/outcomes.py": (1, "a workload outcome document, before it is stored"),
    "services/api/campaigns/accuracy_performance_pair/types.py": (2, "the pair's roles"),
    "services/api/fan_out.py": (1, "the agent section's own settings"),
    "services/analysis/report_rows.py": (1, "the agent section's own settings"),
    "services/analysis/advice.py": (1, "the agent section's own settings"),
    "services/analysis/priced_rates.py": (2, "an outcome document's agent settings, environment"),
    "services/analysis/systems.py": (1, "the agent section's own settings"),
    "services/core/campaigns/find_peak.py": (1, "a group record's stored request"),
    "services/core/campaigns/accuracy_performance_pair.py": (3, "the pair's roles"),
    "services/analysis/shared_report.py": (2, "a CSV row (report_rows.row_of)"),
    "services/cli/remote_find_peak.py": (1, "a GraphQL agent's settings"),
    "services/cli/remote.py": (2, "a GraphQL run (camelCase fields), not a stored report"),
    "services/cli/comparison.py": (2, "a GraphQL comparison row"),
    "services/cli/commands/advise.py": (1, "a GraphQL advice row"),
    "services/cli/commands/results.py": (1, "a results table row"),
    "services/cli/commands/submit.py": (1, "a GraphQL run (its stability field)"),
    "services/core/scenario.py": (1, "the Mode literal, not a read"),
}


# The report's own modules: the typed report's writer and its reader, where the keys are
# read once for everyone (they moved from shared/, which this never counted, to core).
REPORT_MODULES = {"services/core/run_report.py", "services/core/stored_report.py"}


def _reads() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted((ROOT / "services").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() in REPORT_MODULES:
            continue
        count = len(READ.findall(path.read_text(encoding="utf-8")))
        if count:
            found[path.relative_to(ROOT).as_posix()] = count
    return found


def test_no_string_key_reads_of_a_report_beyond_the_allowlist() -> None:
    found = _reads()
    over = {
        path: f"{count} reads, {ALLOWED.get(path, (0, ''))[0]} allowed"
        for path, count in found.items()
        if count > ALLOWED.get(path, (0, ""))[0]
    }
    assert not over, (
        f"read these reports through services.core.stored_report.load_report: {over} "
        "(attributes of LoadGenReport / OutcomeReport, not string keys)"
    )


def test_the_allowlist_only_shrinks() -> None:
    found = _reads()
    stale = {
        path: f"allowed {allowed}, {found.get(path, 0)} left"
        for path, (allowed, _) in ALLOWED.items()
        if found.get(path, 0) < allowed
    }
    assert not stale, f"lower these allowlist counts to what is left: {stale}"
    assert all(reason for _, reason in ALLOWED.values())
