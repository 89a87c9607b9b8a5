"""Turn expected failures into one-line messages and exit code 1, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from services.core.manifest import ManifestError
from services.inference.backend_interface import BackendError
from services.preprocess.datasets import DatasetError

err_console = Console(stderr=True, highlight=False)


def validation_lines(exc: ValidationError, prefix: str = "") -> list[str]:
    lines = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or prefix or "(input)"
        if prefix and error["loc"]:
            loc = f"{prefix}.{loc}"
        lines.append(f"{loc}: {error['msg'].removeprefix('Value error, ')}")
    return lines


def fail(lines: list[str]) -> NoReturn:
    for line in lines:
        # Messages may come from a server or a file: never read them as Rich markup.
        err_console.print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)
    raise typer.Exit(code=1)


@contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except ManifestError as exc:
        fail(str(exc).splitlines())
    except ValidationError as exc:
        fail(validation_lines(exc))
    except (BackendError, DatasetError, ValueError, LookupError) as exc:
        fail([message_of(exc)])


def message_of(exc: BaseException) -> str:
    """The exception's message. A KeyError's str() is its key quoted ("'x'"): its argument
    is taken instead; any other message is kept whole, quotes it ends with included (a
    name in quotes at the end of a message, as in "no evaluation 'abc'", is the point)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc)
