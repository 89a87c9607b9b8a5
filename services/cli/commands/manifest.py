"""`benchstack manifest validate FILE...` and `benchstack models`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from services.cli.errors import err_console
from services.cli.render import output_console
from services.cli.tables import Column, fitted_table
from services.core.catalogue import list_catalogue
from services.core.manifest import ManifestError, load_manifest
from services.core.manifest_checks import check_manifest

manifest_app = typer.Typer(help="Check model manifests.", no_args_is_help=True)
console = output_console(highlight=False)


@manifest_app.command("validate")
def validate(
    files: list[Path] = typer.Argument(..., help="Manifest YAML files."),
    check_files: bool = typer.Option(
        True, help="Also check local model files against their sha256."
    ),
) -> None:
    """Run every check bench makes on each manifest; print every problem with its field
    path. Exit 1 if any."""
    failed = False
    for path in files:
        try:
            manifest = load_manifest(path)
            check = check_manifest(manifest, hash_files=check_files)
        except ManifestError as exc:
            failed = True
            for problem in exc.problems:
                err_console.print(
                    f"[bold red]error:[/] {escape(f'{path}: {problem}')}", soft_wrap=True
                )
            continue
        for note in check.notes:
            err_console.print(f"[yellow]note:[/] {escape(f'{path}: {note}')}", soft_wrap=True)
        console.print(f"[green]ok[/] {path}: {manifest.ref}")
    if failed:
        raise typer.Exit(code=1)


# The name is what `bench` takes: never cut; the description is the first to go.
MODELS_COLUMNS = (
    Column("name", priority=100, wrap=False),
    Column("version", priority=90, wrap=False),
    Column("framework", priority=40),
    Column("source", priority=30, min_width=12),
    Column("top-1 (ref.)", priority=50, min_width=6, justify="right"),
    Column("description", priority=20, min_width=16),
)


def models() -> None:
    """List the catalogue's models."""
    rows = []
    for manifest in list_catalogue():
        source = manifest.source.architecture or (
            manifest.source.file and manifest.source.file.path
        )
        top1 = manifest.attributes.top1
        rows.append(
            [
                manifest.name,
                manifest.version,
                f"{manifest.framework.name}{manifest.framework.version}",
                escape(str(source)),
                "" if top1 is None else f"{top1:.2f}",
                escape(manifest.description.split(". ")[0]),
            ]
        )
    console.print(fitted_table(MODELS_COLUMNS, rows, width=console.width))


def register(app: typer.Typer) -> None:
    app.add_typer(manifest_app, name="manifest")
    app.command("models")(models)
