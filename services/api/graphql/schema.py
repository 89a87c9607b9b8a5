"""The schema, merged from one folder per domain."""

from __future__ import annotations

import strawberry
from strawberry.tools import merge_types

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
)
