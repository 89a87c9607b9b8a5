"""The schema, merged from one folder per domain."""

from __future__ import annotations

import logging

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaskErrors, ParserCache, ValidationCache
from strawberry.tools import merge_types

from services.api.context import NotAuthenticated
from services.api.graphql.agents.queries import AgentQueries
from services.api.graphql.comparisons.queries import ComparisonQueries
from services.api.graphql.errors import (
    AlreadyFinished,
    InvalidInput,
    InvalidManifest,
    InvalidScenarioSettings,
    ModelExists,
    NoMatchingAgent,
    NotFound,
    UnknownModel,
)
from services.api.graphql.evaluations.mutations import EvaluationMutations
from services.api.graphql.evaluations.queries import EvaluationQueries
from services.api.graphql.evaluations.subscriptions import EvaluationSubscriptions
from services.api.graphql.models.mutations import ModelMutations
from services.api.graphql.models.queries import ModelQueries

Query = merge_types("Query", (EvaluationQueries, ModelQueries, AgentQueries, ComparisonQueries))
Mutation = merge_types("Mutation", (EvaluationMutations, ModelMutations))
Subscription = merge_types("Subscription", (EvaluationSubscriptions,))

log = logging.getLogger(__name__)

MASKED_MESSAGE = "Unexpected error; the server log has the details."
# Distinct operation texts whose parsed and validated form is kept. Clients send a few
# fixed operations over and over, and validating one costs more than running it (most of
# the API's CPU under load); bounded, so unique texts cannot grow memory.
OPERATION_CACHE_SIZE = 256


def should_mask_error(error: GraphQLError) -> bool:
    """Whether a client sees only MASKED_MESSAGE instead of this error.

    Bad input is answered by the typed errors of a result union (InvalidInput and the
    like), which are data, not errors, and never pass through here. What does is either
    the GraphQL layer's own refusal of a malformed operation (no original exception, or
    a GraphQLError: shown, it names the field or variable at fault), a missing token (shown), or an
    unexpected exception, whose text may quote SQL, paths or settings: masked, and
    logged with its traceback so it is not lost.
    """
    original = error.original_error
    if original is None or isinstance(original, GraphQLError | NotAuthenticated):
        return False
    log.error("unexpected error in %s", error.path, exc_info=original)
    return True


schema = strawberry.Schema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    # Listed so every error type appears in the schema even before a union uses it.
    types=[
        UnknownModel,
        InvalidScenarioSettings,
        NoMatchingAgent,
        InvalidManifest,
        InvalidInput,
        NotFound,
        AlreadyFinished,
        ModelExists,
    ],
    # Queries, mutations and subscriptions alike: internals never reach a client.
    # A factory: MaskErrors keeps per-operation state, so each operation gets its own.
    extensions=[
        lambda: MaskErrors(should_mask_error=should_mask_error, error_message=MASKED_MESSAGE),
        # The same text always parses to the same document, and the same document against
        # the same schema and rules always validates the same: both are safe to reuse.
        lambda: ParserCache(maxsize=OPERATION_CACHE_SIZE),
        lambda: ValidationCache(maxsize=OPERATION_CACHE_SIZE),
    ],
)
