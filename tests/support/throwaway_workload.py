"""A throw-away workload folder that tests drop into services/workloads/.

``workload_source`` is a workload.py that declares an options model and the three entries,
nothing else (every other Workload field takes its default). ``write_workload_folder``
writes a whole folder that also measures and stores (``outcome.py``) and, with
``surfaces=True``, owns its surfaces: a CLI command, a GraphQL input and result type, a
report section and a web view, each a file of its own in the folder."""

from __future__ import annotations

from pathlib import Path

WORKLOAD_TEMPLATE = """
from pydantic import BaseModel, ConfigDict, Field

from services.core.workload import Workload


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repeats: int = Field(default=1, ge=1, le=5)


WORKLOAD = Workload(
    name="{name}",
    summary="{summary}",
    options=EchoOptions,
    needs_dataset=False,
    dataset_label="none",
    measure="services.workloads.{name}.outcome:measure",
    read="services.workloads.{name}.outcome:read",
    save="services.workloads.{name}.outcome:save",{surfaces}
)
"""
# The surfaces the folder declares, each a file of its own in it. A typed GraphQL options
# input comes as a field of submitEvaluation's input of its own name (``options_field``).
SURFACES = """
    options_field="{field}",
    report_section="services.workloads.{name}.report_section:report_section",
    web_view="services.workloads.{name}:web/view.js",
    cli_command="services.workloads.{name}.cli:register",
    graphql_options_input="services.workloads.{name}.graphql_types:{Name}Options",
    graphql_result="services.workloads.{name}.graphql_types:{Name}Result","""
OUTCOME = """
from services.aggregator.outcomes import load_outcome, outcome_record
from services.aggregator.repository import save_run
from services.workloads.agent_run import measure_holding_host


def echo(run, threads):
    return {"kind": "{name}", "echoed": run.message.workload_options["repeats"]}


def measure(run):
    return measure_holding_host(run, echo)


def read(evaluation, message, store):
    return load_outcome(store, message.log_keys["{name}"], "{name}")


def save(session, evaluation, message, document):
    record = outcome_record(
        evaluation, message, document, scenario="echo", dataset="none", validity="MEASURED",
        samples_per_second=None, figures=[("echoed", document["echoed"], "count")],
        settings={"{name}": {"repeats": document["echoed"]}},
    )
    save_run(session, record)
"""
REPORT_SECTION = """
from services.core.report_section import ReportSection


def report_section(document):
    echoed = document["echoed"]
    return ReportSection("echoes of {name}", (("echoed", f"{echoed} times"),), {"echoed": echoed})
"""
WEB_VIEW = """
// The run page's section of {name}: how many times it echoed.
export function sections(evaluation, run, page) {
  const echoed = run?.metrics?.find((m) => m.name === "echoed")?.value;
  const card = page.card("Echoes of {name}", "echo-title",
    page.h("p", { "data-echoed": echoed ?? "" }, `echoed ${echoed ?? "nothing yet"}`));
  card.dataset.workloadSection = "{name}";
  return [card];
}
"""
CLI = """
import typer

app = typer.Typer(help="Echo, the throw-away workload's own command.")


@app.command()
def say(repeats: int = typer.Option(1, min=1, max=5)) -> None:
    typer.echo(" ".join(["echo"] * repeats))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="{name}")
"""
GRAPHQL_TYPES = """
import strawberry

from services.core.stored_report import OutcomeReport, load_report


@strawberry.input(description="The options of {name}.")
class {Name}Options:
    repeats: int = 1


@strawberry.type(description="What {name} measured.")
class {Name}Result:
    echoed: int

    @classmethod
    def from_report(cls, report):
        # Run's field of this workload's name: its outcome, or null for a run of another kind.
        stored = load_report(report)
        if not isinstance(stored, OutcomeReport) or stored.kind != "{name}":
            return None
        return cls(echoed=stored.document["echoed"])
"""


def options_field(name: str) -> str:
    """The GraphQL input field its options come in: ``throwaway_ab12`` -> ``throwawayAb12``."""
    prefix = type_prefix(name)
    return prefix[0].lower() + prefix[1:]


def type_prefix(name: str) -> str:
    """GraphQL type names' prefix for a workload name: ``throwaway_ab12`` -> ``ThrowawayAb12``."""
    return "".join(part.capitalize() for part in name.split("_"))


def _filled(template: str, name: str, summary: str = "") -> str:
    return (
        template.replace("{name}", name)
        .replace("{Name}", type_prefix(name))
        .replace("{field}", options_field(name))
        .replace("{summary}", summary)
    )


def workload_source(name: str, summary: str, *, surfaces: bool = False) -> str:
    """The folder's workload.py for a workload called ``name``."""
    declared = _filled(SURFACES, name) if surfaces else ""
    return _filled(WORKLOAD_TEMPLATE.replace("{surfaces}", declared), name, summary)


def write_workload_folder(folder: Path, summary: str, *, surfaces: bool = False) -> str:
    """A whole workload folder at ``folder`` (its name is the folder's): workload.py and
    outcome.py, and with ``surfaces`` its report section, web view, CLI command and GraphQL
    types. Returns the name."""
    name = folder.name
    files = {"__init__.py": "", "outcome.py": OUTCOME}
    if surfaces:
        files |= {
            "report_section.py": REPORT_SECTION,
            "web/view.js": WEB_VIEW,
            "cli.py": CLI,
            "graphql_types.py": GRAPHQL_TYPES,
        }
    for relative, template in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_filled(template, name))
    (folder / "workload.py").write_text(workload_source(name, summary, surfaces=surfaces))
    return name
