"""registerModel: store a manifest (YAML) under its name and version."""

from __future__ import annotations

from typing import Annotated

import strawberry

from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import InvalidManifest, ModelExists, registration_refusal
from services.api.graphql.models.types import ModelType
from services.api.model_registry import register_model
from services.api.rejections import Rejection

RegisterModelResult = Annotated[
    ModelType | InvalidManifest | ModelExists, strawberry.union("RegisterModelResult")
]


def _register(deps: ApiDeps, owner_id: int, text: str, shared: bool) -> ModelType | Rejection:
    with deps.db() as session:
        result = register_model(session, deps.settings, owner_id=owner_id, text=text, shared=shared)
    if isinstance(result, Rejection):
        return result
    return ModelType.from_manifest(result, "registered", shared=shared)


@strawberry.type
class ModelMutations:
    @strawberry.mutation
    async def register_model(
        self,
        info: strawberry.Info,
        manifest: str,
        shared: Annotated[
            bool,
            strawberry.argument(
                description="Let every user list, read and submit it (default: only you)."
            ),
        ] = False,
    ) -> RegisterModelResult:
        owner = info.context.require_user()
        result = await in_thread(_register, info.context.deps, owner, manifest, shared)
        if isinstance(result, Rejection):
            return registration_refusal(result)
        return result
