"""What one system is, to compare and price runs by: a machine (an agent's host and queue,
whatever its process id, or the local host for embedded runs), a framework (name, version,
device) and one set of run settings (batch size, workers, threads, backend options).
"""

from __future__ import annotations

from typing import Any


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


def system_of(report: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(machine, framework, settings) of a stored run: what makes it one system."""
    settings = report.get("settings") or {}
    options = settings.get("backend_options") or {}
    fw = report.get("framework") or {}
    agent_settings = (report.get("agent") or {}).get("settings") or {}
    machine = machine_of(str(report.get("agent_id") or ""), agent_settings) or (
        "local:" + str((report.get("environment") or {}).get("hostname") or "?")
    )
    framework = f"{fw.get('name', '?')} {fw.get('version', '')}".strip()
    return (
        machine,
        framework,
        {
            "device": str(options.get("device") or "cpu"),
            "batch_size": int(report.get("batch_size") or settings.get("batch_size") or 1),
            "workers": int(settings.get("workers") or 1),
            "threads": int(options.get("intra_op_threads") or 0),
            "options": {str(k): v for k, v in sorted((options.get("extra") or {}).items())},
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
