"""The `benchstack` command. Each module in services/cli/commands/ adds its commands, and
each workload that declares one (services/workloads/, ``Workload.cli_command``) its own."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import typer

from services.cli import commands
from services.cli.command_kit import command_kit
from services.core.workload import entry
from services.workloads import workloads
from shared.memory_pages import prefer_ordinary_pages

# Large fresh arrays (a dataset's tensors) are written several times faster without
# numpy's huge-page advice on kernels that compact memory for it (shared/memory_pages.py).
prefer_ordinary_pages()

app = typer.Typer(
    name="benchstack",
    help="Benchmark deep-learning inference across models, frameworks and hardware.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Every command's context carries it: the workloads' commands find it there.
    context_settings={"obj": command_kit()},
)


def _registrations() -> list[tuple[str, Callable[[typer.Typer], None]]]:
    """(name, register) of each commands module and each workload's command, by name: the
    order `benchstack --help` lists them in."""
    found = [
        (info.name, importlib.import_module(f"{commands.__name__}.{info.name}").register)
        for info in pkgutil.iter_modules(commands.__path__)
    ]
    found += [(w.name, entry(w.cli_command)) for w in workloads().values() if w.cli_command]
    return sorted(found, key=lambda pair: pair[0])


for _, register in _registrations():
    register(app)


if __name__ == "__main__":
    app()
