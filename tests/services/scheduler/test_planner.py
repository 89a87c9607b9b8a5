"""Agent matching names the unmet constraint; shards are content-addressed."""

from __future__ import annotations

from pathlib import Path

from services.core.catalogue import resolve_model
from services.core.constraints import parse_terms
from services.preprocess.datasets import Sample
from services.scheduler.planner import (
    AgentChoice,
    AgentView,
    Requirement,
    UnmetConstraint,
    match_agent,
    plan_shards,
)

AGENTS = [
    AgentView("a", "host-a", "inference.torch.cpu", "torch", "2.4.0", "cpu"),
    AgentView("b", "host-b", "inference.null.cpu", "null", "0.1.0", "cpu"),
]
FRAMEWORKS = ["null", "torch", "onnxruntime"]


def need(framework: str, *terms: str, device: str = "cpu") -> Requirement:
    return Requirement(framework, device, tuple(parse_terms(terms, frameworks=FRAMEWORKS)))


def test_match_routes_to_the_framework_queue() -> None:
    choice = match_agent(AGENTS, need("torch"))
    assert isinstance(choice, AgentChoice) and choice.queue == "inference.torch.cpu"
    # The only null agent is on host-b: the shared queue reaches exactly it.
    pinned = match_agent(AGENTS, need("null", "host=host-b"))
    assert isinstance(pinned, AgentChoice) and pinned.queue == "inference.null.cpu"


def test_each_unmet_constraint_is_named() -> None:
    cases = {
        "framework": need("tensorflow"),
        "device": need("torch", device="cuda"),
        "frameworkVersion": need("torch", "torch>=3"),
        "hostname": need("torch", "host=host-z"),
    }
    for constraint, requirement in cases.items():
        result = match_agent(AGENTS, requirement)
        assert isinstance(result, UnmetConstraint) and result.constraint == constraint
        assert result.message.startswith(constraint + ":")
    assert isinstance(match_agent([], need("null")), UnmetConstraint)


def _samples(folder: Path, count: int, salt: str = "") -> list[Sample]:
    folder.mkdir(parents=True, exist_ok=True)
    samples = []
    for i in range(count):
        path = folder / f"{i}.jpg"
        path.write_bytes(f"{salt}{i}".encode())
        samples.append(Sample(id=f"{i}.jpg", path=path, label=None))
    return samples


def test_shards_are_stable_and_content_addressed(tmp_path: Path) -> None:
    spec = resolve_model("resnet18").inputs[0]
    first = plan_shards(_samples(tmp_path / "a", 10), spec, shard_samples=4)
    again = plan_shards(_samples(tmp_path / "b", 10), spec, shard_samples=4)
    assert [len(s.sample_ids) for s in first] == [4, 4, 2]
    assert [s.key for s in first] == [s.key for s in again]  # same ids, same bytes
    changed = plan_shards(_samples(tmp_path / "c", 10, salt="x"), spec, shard_samples=4)
    assert not {s.key for s in first} & {s.key for s in changed}  # same names, other pixels
