"""`benchstack manifest validate FILE...` and `benchstack models`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from services.cli.errors import err_console
from services.cli.render import output_console
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


def models() -> None:
    """List the catalogue's models."""
    table = Table("name", "version", "framework", "source", "top-1 (ref.)", "description")
    for manifest in list_catalogue():
        source = manifest.source.architecture or (
            manifest.source.file and manifest.source.file.path
        )
        top1 = manifest.attributes.top1
        table.add_row(
            manifest.name,
            manifest.version,
            f"{manifest.framework.name}{manifest.framework.version}",
            str(source),
            "" if top1 is None else f"{top1:.2f}",
            manifest.description.split(". ")[0],
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(manifest_app, name="manifest")
    app.command("models")(models)
