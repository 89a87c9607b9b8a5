"""What one plan transaction reads once, however many evaluations it plans.

A fan-out's members are planned together (services/tasks/scheduler.py): they share the
live agents, the dataset and its shards. Read once each, planning 200 members costs
little more than planning one; read per member, a fan-out over 200 agents took 200 plans
of 35-75 ms each (benchmarks/scale.py). Nothing here outlives the transaction: a folder
dataset may change and agents come and go between plans.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from services.core.constraints import Requirement
from services.core.dispatch import PlannedShard
from services.core.manifest_sections import Input
from services.preprocess.datasets import Dataset, resolve_dataset
from services.preprocess.shards import is_complete
from services.scheduler.agents import live_agent_views
from services.scheduler.planner import AgentChoice, AgentView, UnmetConstraint, match_agent
from services.scheduler.planner import plan_shards as split_into_shards
from shared.db import evaluation_repo
from shared.settings import Settings
from shared.storage import ObjectStore

# (dataset spec, count, seed): what resolve_dataset is given.
DatasetKey = tuple[str, int | None, int]


@dataclass
class PlanLookups:
    """Reads shared by the evaluations one transaction plans, each made at most once."""

    session: Session
    settings: Settings
    store: ObjectStore
    _agents: list[AgentView] | None = None
    _datasets: dict[DatasetKey, Dataset] = field(default_factory=dict)
    _recorded: set[DatasetKey] = field(default_factory=set)
    _shards: dict[tuple[DatasetKey, str], list[PlannedShard]] = field(default_factory=dict)
    _complete: dict[str, bool] = field(default_factory=dict)

    def find_agent(self, need: Requirement) -> AgentChoice | UnmetConstraint:
        if self._agents is None:
            self._agents = live_agent_views(self.session, self.settings)
        return match_agent(self._agents, need)

    def dataset(self, key: DatasetKey) -> Dataset:
        """Raises DatasetError as resolve_dataset does."""
        if key not in self._datasets:
            spec, count, seed = key
            self._datasets[key] = resolve_dataset(
                spec, count=count, seed=seed, cache_dir=self.settings.data_dir
            )
        return self._datasets[key]

    def record_dataset(self, key: DatasetKey, dataset: Dataset) -> None:
        if key in self._recorded:
            return
        spec, count, seed = key
        evaluation_repo.record_dataset(
            self.session,
            spec=spec,
            count=count,
            seed=seed,
            name=dataset.name,
            sample_count=len(dataset.samples),
            class_names=dataset.class_names,
        )
        self._recorded.add(key)

    def shards(self, key: DatasetKey, spec: Input) -> list[PlannedShard]:
        """The dataset's shards for this input spec (its steps are part of each key)."""
        cache_key = (key, spec.model_dump_json())
        if cache_key not in self._shards:
            self._shards[cache_key] = split_into_shards(
                self.dataset(key).samples, spec, shard_samples=self.settings.shard_samples
            )
        return self._shards[cache_key]

    def is_complete(self, shard_key: str) -> bool:
        if shard_key not in self._complete:
            self._complete[shard_key] = is_complete(self.store, shard_key)
        return self._complete[shard_key]
