"""The schema, merged from one folder per domain and one per group kind
(services/api/campaigns/, found by its registry)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
)
from strawberry.tools import merge_types

from services.api.campaigns.registry import campaigns
from services.api.context import NotAuthenticated
from services.api.faults import (
    UNAVAILABLE_CODES,
    outage_of,
    unavailable_dependency,
    unavailable_message,
)
from services.api.graphql.advice.queries import AdviceQueries
from services.api.graphql.agents.queries import AgentQueries
from services.api.graphql.comparisons.queries import ComparisonQueries
from services.api.graphql.datasets.queries import DatasetQueries
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
from services.api.graphql.history.queries import HistoryQueries
from services.api.graphql.input_guard import InputGuard
from services.api.graphql.models.mutations import ModelMutations
from services.api.graphql.models.queries import ModelQueries
from services.api.graphql.operation_bounds import OperationBounds
from services.api.graphql.workload_fields import workload_queries
from services.api.observability import UNAVAILABLE
from shared.settings_groups.request_limits import RequestLimits

Subscription = merge_types("Subscription", (EvaluationSubscriptions,))

log = logging.getLogger(__name__)

MASKED_MESSAGE = "Unexpected error; the server log has the details."
# Distinct operation texts whose parsed and validated form is kept. Clients send a few
# fixed operations over and over, and validating one costs more than running it (most of
# the API's CPU under load); bounded, so unique texts cannot grow memory.
OPERATION_CACHE_SIZE = 256


def should_mask_error(error: GraphQLError) -> bool:
    """Whether a client sees only MASKED_MESSAGE (or, for an outage, "<dependency>
    unavailable") instead of this error.

    Bad input is answered by the typed errors of a result union (InvalidInput and the
    like), which are data, not errors, and never pass through here; or, for NUL
    characters and non-finite numbers anywhere, by InputGuard's BAD_USER_INPUT error.
    What does pass is either the GraphQL layer's own refusal of a malformed operation
    (no original exception, or a GraphQLError: shown, it names the field or variable at
    fault), a missing token (shown), or an unexpected exception, whose text may quote
    SQL, paths or settings: masked, and logged with its traceback so it is not lost.
    """
    original = error.original_error
    if original is None or isinstance(original, GraphQLError | NotAuthenticated):
        return False
    log.error("unexpected error in %s", error.path, exc_info=original)
    return True


class MaskErrorsNamingOutages(MaskErrors):
    """MaskErrors, except that an outage of the database, the broker or the object store
    is named, with code DATABASE_UNAVAILABLE, BROKER_UNAVAILABLE or OBJECT_STORE_UNAVAILABLE
    (HTTP 503, see app.py), and counted."""

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        original = error.original_error
        dependency = unavailable_dependency(original) if original is not None else None
        if dependency is None:
            return super().anonymise_error(error)
        UNAVAILABLE.labels(dependency).inc()
        outage = outage_of(original)
        detail = f": {outage.detail}" if outage is not None and outage.detail else ""
        extensions = outage.extensions if outage is not None else {}
        return GraphQLError(
            f"{unavailable_message(dependency)}; try again shortly{detail}",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            original_error=None,
            extensions={**extensions, "code": UNAVAILABLE_CODES[dependency]},
        )


def _root_types() -> tuple[type, type]:
    """Query and Mutation: each domain's fields, then each workload's (its declared
    queries) and each group kind's (campaigns/)."""
    found = campaigns().values()
    query = merge_types(
        "Query",
        (
            EvaluationQueries,
            ModelQueries,
            AgentQueries,
            DatasetQueries,
            ComparisonQueries,
            AdviceQueries,
            HistoryQueries,
            *workload_queries(),
            *(campaign.queries for campaign in found),
        ),
    )
    mutation = merge_types(
        "Mutation",
        (EvaluationMutations, ModelMutations, *(campaign.mutations for campaign in found)),
    )
    return query, mutation


# How much of one error a log line holds: a refused operation's error may quote its source
# line, and a one-line 2 MB query would otherwise be logged whole, once per request.
MAX_LOGGED_ERROR_CHARS = 500


def _shortened(text: str) -> str:
    if len(text) <= MAX_LOGGED_ERROR_CHARS:
        return text
    return f"{text[:MAX_LOGGED_ERROR_CHARS]}... ({len(text):,} characters)"


class LoggedSchema(strawberry.Schema):
    """The schema, logging each error's message shortened, never the operation's text.

    Unexpected errors were logged with their traceback where they were masked
    (should_mask_error); what is left is a client's refused operation, worth a line."""

    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        for error in errors:
            log.info("GraphQL operation refused at %s: %s", error.path, _shortened(error.message))


def make_schema(limits: RequestLimits) -> strawberry.Schema:
    """The schema bounding each operation by ``limits`` (the deployment's settings): the
    nesting of its fields (introspection aside), its aliases and tokens, its selections with
    fragments inlined, the pairs the overlap rule compares, and its estimated cost. The
    token limit is applied while parsing, so a huge document is never built; the expanded
    size, the pairs and the cost before validation (operation_bounds.py), so no rule walks a
    document past them."""
    # The depth and alias limits are validation rules, made once per schema: made per
    # operation (as the limiter extensions do), each operation would bring new rule classes
    # and the validation cache below, keyed by them, would never hit (measured: validation
    # took ~10 % of an API process under benchmarks/api_load.py).
    limit_rules = (
        QueryDepthLimiter(max_depth=limits.max_query_depth).validation_rules
        + MaxAliasesLimiter(max_alias_count=limits.max_query_aliases).validation_rules
    )
    # Factories: extensions keep per-operation state, so each operation gets its own.
    extensions: list[Callable[[], SchemaExtension] | type[SchemaExtension]] = [
        lambda: MaxTokensLimiter(max_token_count=limits.max_query_tokens),
        lambda: AddValidationRules(limit_rules),
        InputGuard,
        # The only validation step: the expanded size and the cost first, then the rules
        # above and graphql-core's, cached (the same document against the same schema and
        # rules always validates the same); then the caller's budget before it runs.
        lambda: OperationBounds(
            max_expanded_size=limits.max_query_expanded_size,
            max_merge_pairs=limits.max_query_merge_pairs,
            max_cost=limits.max_query_cost,
            cache_size=OPERATION_CACHE_SIZE,
        ),
        # Queries, mutations and subscriptions alike: internals never reach a client.
        lambda: MaskErrorsNamingOutages(
            should_mask_error=should_mask_error, error_message=MASKED_MESSAGE
        ),
        # The same text always parses to the same document: safe to reuse.
        lambda: ParserCache(maxsize=OPERATION_CACHE_SIZE),
    ]
    query, mutation = _root_types()
    return LoggedSchema(
        query=query,
        mutation=mutation,
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
        extensions=extensions,
    )


# With the default limits (constructed: no environment read): for tools that print or
# export the schema. The API builds its own from its settings (app.create_app).
schema = make_schema(RequestLimits.model_construct())
