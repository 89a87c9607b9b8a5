"""The bricks workload's GraphQL surface (Workload.graphql_options_input): the options a
submission gives, ``submitEvaluation(bricks: ...)``, as options.BrickOptions checks them."""

from __future__ import annotations

import strawberry


@strawberry.input
class BricksInput:
    granularity: int = 1
    # The square input side; default: the model's own.
    image_size: int | None = None
    # LoadGen SingleStream per run of bricks: at least this many queries per brick and
    # this long per run.
    queries: int = 30
    min_duration_s: float = 0.05
