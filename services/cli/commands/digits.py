"""`benchstack digits prepare --output DIR`: a real trained model and its labelled files."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from services.cli.errors import user_errors

app = typer.Typer(help="The digits CNN: a small real model trained on scikit-learn's digits.")


@app.command("prepare")
def prepare(
    output: Path = typer.Option(..., "--output", "-o", help="Folder to write into."),
    seed: int = typer.Option(0, help="Seed for the split and the training."),
    epochs: int = typer.Option(12, min=1, help="Training epochs (a few seconds on a CPU)."),
) -> None:
    """Write the digits as PNG files, train the CNN, write weights + sha256-pinned manifest."""
    try:
        from services.digits.dataset import prepare as prepare_digits
    except ImportError as exc:  # scikit-learn and torch are optional extras
        from services.cli.errors import fail

        fail([f"digits: needs {exc.name}; install it with: pip install scikit-learn torch"])
    console = Console(stderr=True)
    with user_errors(), console.status("writing images and training"):
        result = prepare_digits(output, seed=seed, epochs=epochs)
    test_count = sum(1 for _ in result.test_dir.rglob("*.png"))
    out = Console(highlight=False)
    out.print(f"manifest  {result.manifest}")
    out.print(f"weights   {result.weights} (sha256 {result.sha256})")
    out.print(f"test set  {result.test_dir} ({test_count} images)")
    out.print(f"top-1 after training, plain torch on the test set: {result.test_top1:.2f} %")
    out.print(
        "accuracy and performance in one go:\n"
        f"  benchstack bench {result.manifest} --dataset {result.test_dir} "
        f"--samples {test_count} --batch-size 32 --submission"
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="digits")
