"""The `benchstack` command. Each module in services/cli/commands/ adds its commands."""

from __future__ import annotations

import importlib
import pkgutil

import typer

from services.cli import commands
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
)

for module_info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
    module = importlib.import_module(f"{commands.__name__}.{module_info.name}")
    module.register(app)


if __name__ == "__main__":
    app()
