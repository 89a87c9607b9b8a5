"""What one system is, to compare and price runs by: a machine (an agent's host and queue,
whatever its process id, or the local host for embedded runs), a framework (name, version,
device) and one set of run settings (batch size, workers, threads, backend options).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.core.run_report import RunSettings
from services.core.stored_report import LoadGenReport, load_loadgen_report, typed


def machine_of(agent_id: str, agent_settings: dict[str, Any] | None = None) -> str:
    """The machine of an agent: the one it declares (``agent_machine``), else "host/queue"
    of its id "host/queue/pid". The process id changes at every restart of the agent; the
    machine and what it serves do not, so a restarted agent's runs and prices stay one
    system's."""
    declared = (agent_settings or {}).get("machine")
    if isinstance(declared, str) and declared:
        return declared
    parts = agent_id.split("/")
    return "/".join(parts[:-1]) if len(parts) >= 3 and parts[-1].isdigit() else agent_id


def system_of(stored: Mapping[str, Any] | LoadGenReport) -> tuple[str, str, dict[str, Any]]:
    """(machine, framework, settings) of a stored run: what makes it one system."""
    report = load_loadgen_report(stored)
    settings = report.settings or typed(RunSettings, {})
    options = settings.backend_options
    machine = machine_of(report.agent_id, report.agent.get("settings") or {}) or (
        "local:" + str(report.environment.get("hostname") or "?")
    )
    framework = f"{report.framework.get('name', '?')} {report.framework.get('version', '')}"
    return (
        machine,
        framework.strip(),
        {
            "device": str(options.device or "cpu"),
            "batch_size": int(report.batch_size or settings.batch_size or 1),
            "workers": int(settings.workers or 1),
            "threads": int(options.intra_op_threads or 0),
            "options": {str(k): v for k, v in sorted(options.extra.items())},
        },
    )


def label_of(machine: str, framework: str, settings: dict[str, Any]) -> str:
    """A system in one line: machine, framework and device, then its settings."""
    parts = [
        machine,
        f"{framework} on {settings['device']}",
        f"batch {settings['batch_size']}",
        f"workers {settings['workers']}",
        f"threads {settings['threads'] or 'auto'}",
    ]
    parts += [f"{k}={v}" for k, v in settings["options"].items()]
    return ", ".join(parts)
