"""constructedLatency (the bricks workload's query, Workload.graphql_queries): a model's
latency on a system, constructed from the brick timings the stack's agents stored
(DLBricks). Nothing is measured here; a brick the system has no figure for is named in
``missing``, never guessed."""

from __future__ import annotations

from typing import Any

import strawberry
from sqlalchemy.orm import Session

from services.core.workload import QueryKit
from services.workloads.bricks.construct import Construction, construct
from services.workloads.bricks.store import find_recipes, known_systems, system_results

# Systems x recipes answered at most: a model has few recipes, a deployment few systems.
MAX_ANSWERS = 200


@strawberry.type
class ConstructedLatency:
    model: str
    system: str
    granularity: int
    input_shape: list[int]
    layers: int
    bricks: int
    unique_bricks: int
    # Signatures without a timing on this system: the figures below are null until they
    # are measured (submit a bricks evaluation on an agent of that system).
    missing: list[str]
    # The sum of the bricks' median latencies in the recipe's order.
    sequential_ms: float | None
    # The longest chain of bricks that read each other's outputs.
    critical_path_ms: float | None
    # The sequential sum less the floor each brick pays, plus one floor for the model.
    floor_corrected_ms: float | None
    # The sequential sum plus each layer's weights read from memory (null: the system has
    # no memory read, or bricks measured before their weights were counted).
    cold_weights_ms: float | None

    @classmethod
    def of(cls, built: Construction, recipe: dict[str, Any], model: str) -> ConstructedLatency:
        """The answer for ``model``: its construction from ``recipe`` on one system."""
        return cls(
            model=model,
            system=built.system,
            granularity=int(recipe["granularity"]),
            input_shape=[int(side) for side in recipe["input_shape"]],
            layers=built.layers,
            bricks=built.steps,
            unique_bricks=built.unique_bricks,
            missing=list(built.missing),
            sequential_ms=built.sequential_ms,
            critical_path_ms=built.critical_path_ms,
            floor_corrected_ms=built.floor_corrected_ms,
            cold_weights_ms=built.cold_weights_ms,
        )


def constructed_latencies(
    session: Session, model: str, system: str | None, granularity: int | None
) -> list[ConstructedLatency]:
    answers: list[ConstructedLatency] = []
    recipes = find_recipes(session, model, granularity)
    systems = [system] if system is not None else known_systems(session)
    for name in systems:
        results = system_results(session, name)
        for recipe in recipes:
            answers.append(ConstructedLatency.of(construct(recipe, results), recipe, model))
            if len(answers) >= MAX_ANSWERS:
                return answers
    return answers


def queries(kit: QueryKit) -> type:
    """The Query fields bricks adds, reading through the API's ``kit``."""

    @strawberry.type
    class BrickQueries:
        @strawberry.field(
            description="A model's latency constructed from stored brick timings, per system "
            "(all systems with a floor when `system` is not given) and per recipe "
            "(granularity and input shape) a bricks evaluation of the model stored."
        )
        async def constructed_latency(
            self,
            info: strawberry.Info,
            model: str,
            system: str | None = None,
            granularity: int | None = None,
        ) -> list[ConstructedLatency]:
            answers: list[ConstructedLatency] = await kit.read(
                info, constructed_latencies, model, system, granularity
            )
            return answers

    return BrickQueries
