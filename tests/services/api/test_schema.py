"""The schema's operation limits: still enforced, and made once so validation is cached."""

from __future__ import annotations

from typing import Any

from strawberry.extensions.validation_cache import _get_validate_cache

from services.api.schema import OPERATION_CACHE_SIZE, make_schema
from shared.settings_groups.request_limits import RequestLimits

# A query the schema accepts without a context (the type name of the root).
QUERY = "query { __typename }"


def test_a_repeated_operation_is_validated_once() -> None:
    # Strawberry's cache is keyed by (schema, document, rules): limit rules made anew for
    # each operation would miss it every time. Private API, read only to count hits.
    schema = make_schema(RequestLimits.model_construct())
    cache: Any = _get_validate_cache(OPERATION_CACHE_SIZE)
    assert schema.execute_sync(QUERY).errors is None
    before = cache.cache_info()
    for _ in range(3):
        assert schema.execute_sync(QUERY).errors is None
    after = cache.cache_info()
    assert after.hits - before.hits == 3
    assert after.misses == before.misses


def test_depth_and_aliases_are_still_limited() -> None:
    schema = make_schema(RequestLimits.model_construct(max_query_depth=2, max_query_aliases=2))
    # Introspection is exempt from the depth limit: a query over the schema's own types.
    deep = "query { evaluations(first: 1) { items { runs { metrics { name } } } } }"
    errors = schema.execute_sync(deep).errors
    assert errors and "exceeds maximum operation depth" in errors[0].message
    aliased = "query { a: __typename b: __typename c: __typename }"
    errors = schema.execute_sync(aliased).errors
    assert errors and "3 aliases found. Allowed: 2" in errors[0].message
