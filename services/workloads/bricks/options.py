"""What a DLBricks evaluation asks for, bounded; importable without torch (the API checks
it at submission, the worker again before it measures)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The same bounds the CLI enforces (signature.MAX_GRANULARITY, generate's image sizes,
# measure's query and duration limits), repeated here so the API needs no torch import;
# tests/services/workloads/bricks/test_options.py checks they agree.
MAX_GRANULARITY = 64
MIN_IMAGE_SIZE, MAX_IMAGE_SIZE = 16, 1024
MAX_QUERIES = 100_000
MAX_MIN_DURATION_S = 600.0


class BrickOptions(BaseModel):
    """Granularity H (layers per brick), the square input side (None: the model's own),
    and how long each brick is measured (LoadGen SingleStream at batch 1: at least
    ``queries`` queries and ``min_duration_s`` per run of bricks)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    granularity: int = Field(default=1, ge=1, le=MAX_GRANULARITY)
    image_size: int | None = Field(default=None, ge=MIN_IMAGE_SIZE, le=MAX_IMAGE_SIZE)
    queries: int = Field(default=30, ge=1, le=MAX_QUERIES)
    min_duration_s: float = Field(default=0.05, gt=0, le=MAX_MIN_DURATION_S)
