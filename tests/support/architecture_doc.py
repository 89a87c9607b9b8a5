"""docs/architecture.md's plug-in lists, made from the registries: the backends
(services/inference/backends/registry.specs), the workloads (services/workloads.workloads)
and the campaigns (services/api/campaigns/registry.campaigns), with what each declares.
tests/test_architecture_doc.py checks that the block between the markers is what this
makes; after adding or changing a plug-in, rewrite it with

    python -m tests.support.architecture_doc --write
"""

from __future__ import annotations

import sys
from pathlib import Path

from services.api.campaigns.registry import campaigns
from services.inference.backends.registry import specs
from services.workloads import workloads

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
BEGIN = "<!-- plug-ins: made by `python -m tests.support.architecture_doc --write` -->"
END = "<!-- end of plug-ins -->"
# The surfaces a workload may declare (services/core/workload.py), in the order shown.
SURFACES = (
    "cli_command",
    "graphql_options_input",
    "graphql_result",
    "graphql_queries",
    "report_section",
    "web_view",
    "fan_out_figures",
)


def _backends() -> list[str]:
    rows = ["| backend | runs on | installed by | what it is |", "| --- | --- | --- | --- |"]
    for name, spec in sorted(specs().items()):
        extra = f"`.[{spec.extra or name}]`"
        rows.append(f"| `{name}` | {', '.join(spec.devices)} | {extra} | {spec.summary} |")
    return rows


def _workloads() -> list[str]:
    rows = ["| workload | surfaces it declares | what it measures |", "| --- | --- | --- |"]
    for name, workload in sorted(workloads().items()):
        declared = [f"`{s}`" for s in SURFACES if getattr(workload, s, None)]
        rows.append(f"| `{name}` | {', '.join(declared) or 'none'} | {workload.summary} |")
    return rows


def _campaigns() -> list[str]:
    rows = ["| campaign (group kind) | stack folder | members |", "| --- | --- | --- |"]
    for kind, campaign in sorted(campaigns().items()):
        folder = kind.replace("-", "_")
        members = "one after another" if campaign.next_step else "all at once"
        rows.append(f"| `{kind}` | `services/api/campaigns/{folder}/` | {members} |")
    return rows


def plugin_block() -> str:
    """The block as the registries make it, markers included."""
    lines = [BEGIN, "", *_backends(), "", *_workloads(), "", *_campaigns(), "", END]
    return "\n".join(lines)


def documented_block(text: str) -> str:
    """The block as docs/architecture.md has it, markers included."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[start:end]


def write() -> None:
    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(text.replace(documented_block(text), plugin_block()), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.support.architecture_doc --write")
    write()
