"""No code outside a workload's or a campaign's own files branches on its name: what an
edge needs to know about a kind is declared in its contract (services/core/workload.py
``Workload``, services/api/campaigns/contract.py ``Campaign``) and read from the registries.

The scan looks in services/ and shared/ for a comparison (``==``, ``!=``, ``in (...)``,
``case``) against a registered workload's name or a campaign's group kind, outside that
kind's own files: ``services/workloads/<name>/`` for a workload; its folder under
services/api/campaigns/ and its modules in services/core/campaigns/ and services/campaigns/
for a campaign. ALLOWED lists what is left, each with why; an entry that no longer matches
must go. tests/services/inference/test_backend_name_branches.py does the same for backends."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import services.api.campaigns as api_campaigns
from services.api.campaigns.registry import campaigns
from services.core.workload import DEFAULT_WORKLOAD
from services.workloads import workloads

ROOTS = ("services", "shared")
# (file, the line stripped) -> why it stays.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "services/workloads/bricks/fx_modules.py",
        'if not key.startswith("_") and key != "training" and is_plain(value)',
    ): "a torch module's own ``training`` attribute (train/eval mode), not the workload",
    (
        "services/inference/measurement.py",
        'if evaluation.workload in (None, "", "loadgen"):',
    ): "inference's own measurement.json is LoadGen's outcome file; the stages sit below "
    "services/workloads and cannot ask its registry (moves with the typed report, item 4)",
}


# Constants that stand for a kind's name: a comparison against one is a branch on it too.
CONSTANTS = {DEFAULT_WORKLOAD: ("DEFAULT_WORKLOAD",)}


def _pattern(name: str) -> re.Pattern[str]:
    quoted = [rf"""(['"]){re.escape(name)}\{i}""" for i in range(1, 5)]
    said = "|".join(rf"\b{constant}\b" for constant in CONSTANTS.get(name, ()))
    operand = [f"(?:{q}|{said})" if said else q for q in quoted]
    return re.compile(
        rf"(?:==|!=)\s*{operand[0]}|{operand[1]}\s*(?:==|!=)"
        rf"|\bin\s*[(\[{{][^)\]}}]*{operand[2]}|^\s*case\s+{operand[3]}"
    )


def own_files() -> dict[str, tuple[str, ...]]:
    """Each kind's name -> the paths (a folder ends in "/") that are its own."""
    owned: dict[str, tuple[str, ...]] = {
        name: (f"services/workloads/{name}/",) for name in workloads()
    }
    for folder in sorted(m.name for m in pkgutil.iter_modules(api_campaigns.__path__) if m.ispkg):
        kind = importlib.import_module(f"services.api.campaigns.{folder}").CAMPAIGN.kind
        owned[kind] = (
            f"services/api/campaigns/{folder}/",
            f"services/core/campaigns/{folder}.py",
            f"services/campaigns/{folder}.py",
        )
    return owned


def branches_on_kinds(root: Path, owned: dict[str, tuple[str, ...]]) -> set[tuple[str, str]]:
    """(file, line) of each comparison against a kind's name under ``root``'s ROOTS, outside
    that kind's own paths."""
    patterns = {name: _pattern(name) for name in owned}
    found = set()
    for top in ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            for line in path.read_text(encoding="utf-8").splitlines():
                stripped = line.strip()
                if stripped.startswith("#"):
                    continue
                for name, pattern in patterns.items():
                    if pattern.search(stripped) and not relative.startswith(owned[name]):
                        found.add((relative, stripped))
    return found


def test_every_kind_is_scanned() -> None:
    owned = own_files()
    # The three workloads and five campaigns of today at least: a registry that finds
    # none would make the scan below pass on nothing.
    assert {"loadgen", "bricks", "training"} <= set(owned)
    assert set(campaigns()) <= set(owned)
    assert {"repeats", "sweep", "find-peak", "training-scaling"} <= set(owned)
    assert owned["find-peak"][0] == "services/api/campaigns/find_peak/"


def test_no_edge_branches_on_a_kind_name() -> None:
    found = branches_on_kinds(Path("."), own_files())
    unexplained = sorted(found - set(ALLOWED))
    assert not unexplained, "branches on a kind's name outside its own files:\n" + "\n".join(
        f"  {path}: {line}" for path, line in unexplained
    )
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allowed branches no longer there (drop them from ALLOWED): {stale}"


def test_the_scan_finds_a_planted_branch(tmp_path: Path) -> None:
    files = {
        "services/api/edge.py": 'if evaluation.workload == "training":\n',
        # Its own folder: the workload may name itself.
        "services/workloads/training/own.py": 'if report["kind"] == "training":\n',
        # A workload named in a campaign's folder is outside the workload's own.
        "services/api/campaigns/training_scaling/group.py": 'if base.workload != "training":\n',
        "services/core/campaigns/sweep.py": 'ok = group["kind"] == "sweep"\n',
        "services/api/quota.py": "if workload != DEFAULT_WORKLOAD:\n",
        "shared/x.py": (
            "ok = name == 'trainings'\n"  # not a kind's name
            "if kind in ('repeats', 'x'):\n"
            "    pass\n"
            "match group_kind:\n"
            "    case 'find-peak':\n"
            "        pass\n"
        ),
    }
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    assert branches_on_kinds(tmp_path, own_files()) == {
        ("services/api/edge.py", 'if evaluation.workload == "training":'),
        ("services/api/campaigns/training_scaling/group.py", 'if base.workload != "training":'),
        ("services/api/quota.py", "if workload != DEFAULT_WORKLOAD:"),
        ("shared/x.py", "if kind in ('repeats', 'x'):"),
        ("shared/x.py", "case 'find-peak':"),
    }
