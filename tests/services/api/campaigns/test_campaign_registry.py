"""A group kind is its folder: one dropped into services/api/campaigns/ is in the schema
and, with a next step, among the aggregator's group steps, with nothing else edited."""

from __future__ import annotations

import importlib
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.api import campaigns as campaigns_package
from services.api.campaigns import registry
from services.api.group_steps import group_steps
from services.api.schema import make_schema
from shared.settings_groups.request_limits import RequestLimits

CAMPAIGN = """
import strawberry

from services.api.campaigns.contract import Campaign


@strawberry.type
class Queries:
    @strawberry.field
    def {name}_state(self, group_id: str) -> str:
        return "waiting " + group_id


@strawberry.type
class Mutations:
    @strawberry.mutation
    def submit_{name}(self, count: int) -> int:
        return count


def next_step(session, settings, publish, evaluation):
    return ["the next member"]


CAMPAIGN = Campaign(kind="{name}", queries=Queries, mutations=Mutations, next_step=next_step)
"""


@pytest.fixture
def throwaway() -> Iterator[str]:
    name = f"throwaway{uuid.uuid4().hex[:8]}"
    folder = Path(campaigns_package.__path__[0]) / name
    folder.mkdir()
    try:
        (folder / "__init__.py").write_text(CAMPAIGN.replace("{name}", name))
        importlib.invalidate_caches()
        registry.campaigns.cache_clear()
        yield name
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for module in [m for m in sys.modules if m.endswith(f".{name}")]:
            del sys.modules[module]
        registry.campaigns.cache_clear()


def test_a_new_folder_is_in_the_schema_and_the_group_steps(throwaway: str) -> None:
    assert throwaway in registry.campaigns()

    schema = make_schema(RequestLimits.model_construct())
    shown = schema.as_str()
    assert f"{throwaway}State(groupId: String!): String!" in shown
    assert f"submit{throwaway.capitalize()}(count: Int!): Int!" in shown
    answer = schema.execute_sync(f'{{ {throwaway}State(groupId: "g1") }}')
    assert answer.errors is None and answer.data == {f"{throwaway}State": "waiting g1"}

    step = group_steps()[throwaway]
    assert step(None, None, None, None) == "next member(s) submitted"  # type: ignore[arg-type]


def test_the_shipped_kinds_and_which_of_them_step() -> None:
    shipped = registry.campaigns()
    assert set(shipped) == {
        "sweep",
        "repeats",
        "find-peak",
        "accuracy-performance-pair",
        "rerun",
        "training-scaling",
    }
    assert {kind for kind, c in shipped.items() if c.next_step} == {"find-peak", "training-scaling"}


def test_a_folder_without_a_campaign_is_refused() -> None:
    name = f"broken{uuid.uuid4().hex[:8]}"
    folder = Path(campaigns_package.__path__[0]) / name
    folder.mkdir()
    try:
        (folder / "__init__.py").write_text("CAMPAIGN = 'a sweep'\n")
        importlib.invalidate_caches()
        registry.campaigns.cache_clear()
        with pytest.raises(TypeError, match=f"{name}.CAMPAIGN must be a Campaign"):
            registry.campaigns()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        sys.modules.pop(f"{campaigns_package.__name__}.{name}", None)
        registry.campaigns.cache_clear()
