"""The packages' imports form layers, as ../shared/ARCHITECTURE.md draws them.

pyproject.toml's import-linter contract (run by scripts/test.sh) says which layer may
import which. These tests check what the contract cannot: that the package graph has no
loop at all (a loop inside one line of the contract would pass it), and that every
package under services/ has a place in the contract, so a new one must be placed.
Imports are read from the source, function-level ones included.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "shared":
        return "shared"
    if parts[0] == "services" and len(parts) > 1:
        return f"services.{parts[1]}"
    return None


def package_graph() -> dict[str, set[str]]:
    """services.<package> (and shared) -> the packages it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for root in ("services", "shared"):
        for path in (REPO / root).rglob("*.py"):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            source = _package(module)
            if source is None:
                continue  # services/__init__.py: the root, which wires the packages
            graph[source]
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [f"{node.module}.{alias.name}" for alias in node.names]
                else:
                    continue
                for name in names:
                    target = _package(name)
                    if target is not None and target != source:
                        graph[source].add(target)
    return graph


def test_the_package_import_graph_has_no_loop() -> None:
    graph = package_graph()
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"a loop between packages: {' -> '.join(exc.args[1])}") from exc
    assert order[0] == "shared", order


def test_every_package_has_a_layer_in_the_contract() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    placed = {
        name.strip() for layer in contract["layers"] for name in layer.replace(":", "|").split("|")
    }
    packages = set(package_graph()) | {
        f"services.{p.stem}" for p in (REPO / "services").glob("*.py") if p.stem != "__init__"
    }
    assert packages <= placed, f"not in any layer: {sorted(packages - placed)}"
    assert "ignore_imports" not in contract, "the contract holds with no exception"


# ARCHITECTURE.md's layers, top to bottom.
ARCHITECTURE_TIERS = ("edges", "campaigns", "workloads", "stages", "core", "shared")


def contract_layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [" | ".join(name.strip() for name in layer.split("|")) for layer in contract["layers"]]


def documented_layers() -> list[tuple[str, str]]:
    """(layer, tier) per line of docs/architecture.md's "Layers that CI enforces" block."""
    doc = (REPO / "docs" / "architecture.md").read_text()
    section = doc.split("### Layers that CI enforces", 1)[1]
    block = section.split("```", 2)[1]
    rows = [re.split(r"\s{2,}", line.strip()) for line in block.strip().splitlines()]
    return [(row[0], row[1]) for row in rows]


def test_the_doc_lists_the_contracts_layers_in_architectures_order() -> None:
    documented = documented_layers()
    assert [layer for layer, _ in documented] == contract_layers()
    tiers = [tier for _, tier in documented]
    assert set(tiers) <= set(ARCHITECTURE_TIERS), tiers
    ranks = [ARCHITECTURE_TIERS.index(tier) for tier in tiers]
    assert ranks == sorted(ranks), f"a layer above one of a higher tier: {documented}"


def test_shared_reads_the_frameworks_only_once_services_provided_them() -> None:
    code = (
        "from shared import frameworks\n"
        "try:\n"
        "    frameworks.catalogue()\n"
        "except frameworks.NoFrameworkCatalogue as exc:\n"
        "    print('refused:', exc)\n"
        "import services\n"
        "print('torch' in frameworks.catalogue().backend_names())\n"
        "print(frameworks.canonical_framework('pytorch'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert result.returncode == 0, result.stderr
    refused, provided, alias = result.stdout.splitlines()
    assert refused.startswith("refused: no framework catalogue: import services first")
    assert (provided, alias) == ("True", "torch")


# No two modules (or subpackages) of one package import each other, directly or round a
# loop: what both need sits in a module below them, or is passed in. Function-level
# imports count, so a loop cannot hide inside a function.


def _loops(children: list[str], imports: dict[str, set[str]]) -> list[set[str]]:
    """The groups of two or more children that reach each other (strongly connected)."""
    reach = {child: _reachable(child, imports) for child in children}
    groups: list[set[str]] = []
    for child in children:
        group = {other for other in reach[child] if child in reach[other]} | {child}
        if len(group) > 1 and group not in groups:
            groups.append(group)
    return groups


def _reachable(start: str, imports: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in imports[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def module_loops(*roots: str) -> dict[str, list[set[str]]]:
    """package -> the loops among its children, each child with everything below it;
    function-level imports count (grimp reads them as import-linter does)."""
    graph = grimp.build_graph(*(roots or ("services", "shared")), include_external_packages=False)
    loops: dict[str, list[set[str]]] = {}
    for package in sorted(name for name in graph.modules if graph.find_children(name)):
        children = sorted(graph.find_children(package))
        imports = {
            child: {
                other
                for other in children
                if other != child
                and graph.direct_import_exists(importer=child, imported=other, as_packages=True)
            }
            for child in children
        }
        if found := _loops(children, imports):
            loops[package] = found
    return loops


def test_no_loop_between_modules_of_one_package() -> None:
    found = module_loops()
    assert not found, f"modules of one package import each other round a loop: {found}"


def test_a_loop_through_a_function_level_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: a package whose two modules import each other, one of them only
    inside a function, and whose third module imports one of them without a loop."""
    package = tmp_path / "planted_loop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "alpha.py").write_text("from planted_loop import beta\n")
    (package / "beta.py").write_text("def later():\n    from planted_loop import alpha\n")
    (package / "gamma.py").write_text("from planted_loop import alpha\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert module_loops("planted_loop") == {
        "planted_loop": [{"planted_loop.alpha", "planted_loop.beta"}]
    }
