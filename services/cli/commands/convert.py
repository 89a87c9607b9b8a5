"""`benchstack convert MODEL --to onnx [--output DIR]`: export a torch manifest to ONNX.

Without ``--output`` the result goes to the conversion cache that the onnxruntime and
tensorrt backends read, so converting ahead of a benchmark keeps export time out of it.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from services.cli.errors import user_errors

TARGETS = ("onnx",)
console = Console(highlight=False)


def convert(
    model: str = typer.Argument(..., help="Catalogue name (e.g. resnet50) or manifest path."),
    to: str = typer.Option("onnx", "--to", help=f"Target format; accepted: {', '.join(TARGETS)}."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Folder for the files; default: the conversion cache."
    ),
    opset: int = typer.Option(17, help="ONNX opset to export."),
) -> None:
    """Convert a PyTorch model to ONNX and write a manifest for it next to the file."""
    if to not in TARGETS:
        raise typer.BadParameter(f"{to!r} is not accepted; accepted: {', '.join(TARGETS)}")
    with user_errors():
        # Imported here: resolving and converting pull in torch, --help must not.
        from services.core.catalogue import resolve_model
        from services.inference.backends.convert import convert_to_onnx, converted_onnx

        manifest = resolve_model(model)
        if output is None:
            result = converted_onnx(manifest, opset=opset)
        else:
            result = convert_to_onnx(manifest, output, opset=opset)
    yaml_path = result.path.with_suffix(".yaml")
    console.print(f"[green]converted[/] {manifest.ref} -> {result.path}", soft_wrap=True)
    console.print(f"  sha256   {result.sha256}")
    console.print(f"  manifest {yaml_path}", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("convert")(convert)
