"""The torch-free bounds the API checks agree with the ones the bricks code enforces."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.workloads.bricks import generate, measure, options, signature


def test_the_api_bounds_are_the_bricks_code_bounds() -> None:
    assert options.MAX_GRANULARITY == signature.MAX_GRANULARITY
    assert (options.MIN_IMAGE_SIZE, options.MAX_IMAGE_SIZE) == (
        generate.MIN_IMAGE_SIZE,
        generate.MAX_IMAGE_SIZE,
    )
    assert options.MAX_QUERIES == measure.MAX_QUERIES
    assert options.MAX_MIN_DURATION_S == measure.MAX_MIN_DURATION_S


@pytest.mark.parametrize(
    "given",
    [{"granularity": 0}, {"granularity": 65}, {"image_size": 8}, {"queries": 0}, {"speed": 1}],
)
def test_out_of_range_or_unknown_options_are_refused(given: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        options.BrickOptions.model_validate(given)
