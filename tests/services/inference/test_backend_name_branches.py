"""No code outside a backend's folder branches on a backend's name: what an edge needs to
know about a backend is declared in its spec (services/inference/backends/spec.py).

The scan looks in services/ and shared/ for a comparison (``==``, ``!=``, ``in (...)``,
``case``) against a backend's name or alias, outside services/inference/backends/<name>/.
ALLOWED lists what is left, each with why; an entry that no longer matches must go."""

from __future__ import annotations

import re
from pathlib import Path

from services.inference.backends import registry

ROOTS = ("services", "shared")
# (file, the line stripped) -> why it stays. Each is a name that is not the backend's.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "services/workloads/training/keras_throughput.py",
        'if keras.backend.backend() != "tensorflow":',
    ): "Keras 3's own backend (tensorflow, jax or torch), not a benchstack backend",
    (
        "services/workloads/bricks/fx_allow.py",
        'if namespace == "torch":',
    ): "a Python module's namespace in torch.fx's allow-list, not a backend",
    **{
        ("services/workloads/training/cli.py", line): (
            "training's own training loops (torch or Keras, training/options.FRAMEWORKS), "
            "chosen by its command's --framework inside its folder"
        )
        for line in (
            'if framework == "tensorflow":',
            'if settings.framework == "tensorflow":',
        )
    },
}


def _pattern(names: list[str]) -> re.Pattern[str]:
    name = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    quoted = rf"""(['"])(?:{name})\1"""
    quoted2 = rf"""(['"])(?:{name})\2"""
    return re.compile(
        rf"(?:==|!=)\s*{quoted}|{quoted2}\s*(?:==|!=)|\bin\s*[(\[{{][^)\]}}]*"
        rf"""(['"])(?:{name})\3|^\s*case\s+(['"])(?:{name})\4"""
    )


def branches_on_names(root: Path, names: list[str], own_folders: list[str]) -> set[tuple[str, str]]:
    """(file, line) of each comparison against one of ``names`` under ``root``'s ROOTS,
    outside the ``own_folders`` (relative paths)."""
    pattern = _pattern(names)
    found = set()
    for top in ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if any(relative.startswith(f"{folder}/") for folder in own_folders):
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                stripped = line.strip()
                if not stripped.startswith("#") and pattern.search(stripped):
                    found.add((relative, stripped))
    return found


def _backend_names() -> tuple[list[str], list[str]]:
    names = [*registry.backend_names(), *registry.aliases()]
    folders = [f"services/inference/backends/{name}" for name in registry.backend_names()]
    return names, folders


def test_no_edge_branches_on_a_backend_name() -> None:
    names, folders = _backend_names()
    found = branches_on_names(Path("."), names, folders)
    unexplained = sorted(found - set(ALLOWED))
    assert not unexplained, "branches on a backend's name outside its folder:\n" + "\n".join(
        f"  {path}: {line}" for path, line in unexplained
    )
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allowed branches no longer there (drop them from ALLOWED): {stale}"


def test_the_scan_finds_a_planted_branch(tmp_path: Path) -> None:
    edge = tmp_path / "services" / "api" / "edge.py"
    own = tmp_path / "services" / "inference" / "backends" / "torch" / "own.py"
    for path in (edge, own):
        path.parent.mkdir(parents=True)
        path.write_text('if backend.name == "torch":\n    pass\n')
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "x.py").write_text(
        "ok = framework == 'torchvision'\n"  # not a backend's name
        "if framework in ('null', 'x'):\n"
        "    pass\n"
        "match framework:\n"
        "    case 'pytorch':\n"
        "        pass\n"
    )
    names, folders = _backend_names()
    assert branches_on_names(tmp_path, names, folders) == {
        ("services/api/edge.py", 'if backend.name == "torch":'),
        ("shared/x.py", "if framework in ('null', 'x'):"),
        ("shared/x.py", "case 'pytorch':"),
    }
