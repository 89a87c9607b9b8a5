"""A brick suite's folder, read: where its bricks and recipes are, which it holds, and a
brick loaded to be timed (generate.py writes the folder; its docstring draws it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from services.workloads.bricks.extract import brick_inputs
from services.workloads.bricks.formats import FORMATS
from services.workloads.bricks.fx_arguments import BrickFormatError
from services.workloads.bricks.fx_brick import SUFFIX as TORCHFX
from services.workloads.bricks.fx_brick import read_brick
from services.workloads.bricks.measure import unguarded
from services.workloads.bricks.recorded_values import read_values

_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
# Each brick format's files, the one read first first (formats.py); the same signature
# never names bricks of two formats (an ONNX description says "framework": "onnx").
BRICK_SUFFIXES = {name: brick.suffixes for name, brick in FORMATS.items()}


def bricks_dir(suite: Path) -> Path:
    return suite / "bricks"


def is_recipe_name(text: str) -> bool:
    """Whether ``text`` can name a recipe file."""
    return bool(_SAFE_NAME.match(text))


def recipe_path(suite: Path, model_name: str) -> Path:
    if not is_recipe_name(model_name):
        raise ValueError(
            f"model: {model_name!r} cannot name a recipe; accepted: letters, digits, '.', "
            "'_' and '-', at most 100"
        )
    return suite / "recipes" / f"{model_name}.json"


def brick_file(suite: Path, signature: str, framework: str = "torch") -> Path | None:
    """The brick's file, in the framework's first format present, or None."""
    for suffix in BRICK_SUFFIXES[framework]:
        path = bricks_dir(suite) / f"{signature}{suffix}"
        if path.exists():
            return path
    return None


def load_brick(
    suite: Path, signature: str, threads: int = 0
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A brick's callable (a torch module, or an onnxruntime session with ``threads``
    intra-op threads for an ONNX brick) and inputs of its recorded shapes, as it takes
    them: ``module(*inputs)``. A torch brick is read from .torchfx (an eager fx module)
    where there is one, else from .pt2 (torch.export, its checks taken out)."""
    folder = bricks_dir(suite)
    description = json.loads((folder / f"{signature}.json").read_text())
    if description.get("framework") == "onnx":
        from services.workloads.bricks.measure_onnx import OnnxCallable, onnx_inputs

        return OnnxCallable(folder / f"{signature}.onnx", threads), onnx_inputs(description)
    path = brick_file(suite, signature)
    if path is None:
        raise ValueError(f"brick: {signature} has a description but no brick file in {folder}")
    # Noise, but for a value-dependent brick that has its model's values (their order).
    inputs = read_values(folder, signature, description) or brick_inputs(description)
    if path.suffix == TORCHFX:
        module = read_brick(path)
        placeholders = sum(1 for n in module.graph.nodes if n.op == "placeholder")
        if placeholders != len(inputs):
            raise BrickFormatError(
                f"brick {signature}: {placeholders} inputs in its graph, "
                f"{len(inputs)} in its description"
            )
        return module, inputs
    exported = unguarded(torch.export.load(path).module())
    # Its graph takes the inputs flattened (a layer fed a tuple gets each tensor apart).
    return exported, tuple(torch.utils._pytree.tree_leaves(inputs))


def list_bricks(suite: Path, framework: str | None = None) -> list[str]:
    """The suite's brick signatures, each once whatever its format: one framework's, or
    every framework's."""
    frameworks = [framework] if framework else list(BRICK_SUFFIXES)
    return sorted(
        {
            p.name.removesuffix(suffix)
            for name in frameworks
            for suffix in BRICK_SUFFIXES[name]
            for p in bricks_dir(suite).glob(f"*{suffix}")
        }
    )


def frameworks_in(suite: Path) -> list[str]:
    """The frameworks the suite holds bricks of, in BRICK_SUFFIXES order."""
    return [name for name in BRICK_SUFFIXES if list_bricks(suite, name)]


def read_recipe(suite: Path, model_name: str) -> dict[str, Any]:
    path = recipe_path(suite, model_name)
    if not path.exists():
        known = sorted(p.stem for p in (suite / "recipes").glob("*.json"))
        raise ValueError(
            f"model: no recipe for {model_name!r} in {suite}; known: {', '.join(known) or '(none)'}"
        )
    recipe: dict[str, Any] = json.loads(path.read_text())
    return recipe
