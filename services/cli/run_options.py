"""The options every embedded run command (bench, sweep, find-peak) takes, declared once:
``takes_run_options`` adds them to a command's own parameters, where Typer reads them, and
hands their values to the command in one mapping (``run_options``)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from services.cli.bench_options import (
    AS_JSON,
    DATASET,
    DEVICE,
    FRAMEWORK,
    OPTION,
    SAMPLES,
    SEED,
    THREADS,
    WORKERS,
)

# name -> (type, Typer declaration), in the order --help lists them after a command's own.
RUN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "framework": (str | None, FRAMEWORK),
    "dataset": (str, DATASET),
    "samples": (int | None, SAMPLES),
    "seed": (int, SEED),
    "device": (str, DEVICE),
    "threads": (int, THREADS),
    "workers": (int, WORKERS),
    "option": (list[str], OPTION),
    "as_json": (bool, AS_JSON),
}


def takes_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` as Typer sees it: its own parameters (all but ``run_options``), then
    the run options; it is called with their values gathered in ``run_options``."""
    hints = typing.get_type_hints(command)
    own = [
        p.replace(annotation=hints[p.name])
        for p in inspect.signature(command).parameters.values()
        if p.name != "run_options"
    ]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for name, (kind, default) in RUN_OPTIONS.items()
    ]

    @functools.wraps(command)
    def with_run_options(**given: Any) -> None:
        run_options = {name: given.pop(name) for name in RUN_OPTIONS}
        command(**given, run_options=run_options)

    parameters = [*own, *shared]
    # Typer reads the signature and the evaluated annotations, not the wrapped function's.
    with_run_options.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    with_run_options.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_run_options
