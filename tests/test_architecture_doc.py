"""docs/architecture.md's plug-in lists are the registries' (tests/support/architecture_doc.py
makes them); its layer list is pyproject's contract (tests/test_layers.py)."""

from __future__ import annotations

from services.api.campaigns.registry import campaigns
from services.inference.backends.registry import specs
from services.workloads import workloads
from tests.support.architecture_doc import DOC, documented_block, plugin_block


def test_the_plugin_lists_are_the_registries() -> None:
    documented = documented_block(DOC.read_text(encoding="utf-8"))
    assert documented == plugin_block(), (
        "docs/architecture.md's plug-in lists differ from the registries: "
        "run `python -m tests.support.architecture_doc --write`"
    )


def test_the_block_names_every_registered_plugin() -> None:
    # What the check above compares must hold each plug-in, or it would pass on nothing.
    block = plugin_block()
    names = [*specs(), *workloads(), *campaigns()]
    assert len(names) >= 12
    assert all(f"`{name}`" in block for name in names)
