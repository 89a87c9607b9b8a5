"""What the CLI lends the commands that workloads declare (services/core/workload.py
``CommandKit``): they live in their workload's folder, below the CLI and the embedded
launcher, and reach these through the root app's context instead of importing them."""

from __future__ import annotations

from typing import Any

from services.cli.errors import user_errors
from services.cli.render import host_text, output_console
from services.core.manifest import ModelManifest
from services.core.request import RunRequest
from services.core.workload import CommandKit
from services.embedded.interrupt import EXIT_INTERRUPTED
from shared.settings import Settings


def bench(request: RunRequest, manifest: ModelManifest, settings: Settings) -> dict[str, Any]:
    """`benchstack bench` on ``request``, run on ``manifest`` instead of resolving its
    model: the run's stored report. Imported when a command benches: the launcher brings
    LoadGen."""
    from services.embedded.bench import run_bench
    from services.embedded.request import Local

    return run_bench(request, settings, local=Local(manifest=manifest))


def command_kit() -> CommandKit:
    return CommandKit(
        user_errors=user_errors,
        host_text=host_text,
        bench=bench,
        interrupted_exit=EXIT_INTERRUPTED,
        output_console=output_console,
    )
