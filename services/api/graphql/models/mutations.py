"""registerModel: store a manifest (YAML) under its name and version."""

from __future__ import annotations

from typing import Annotated, Any

import strawberry
from sqlalchemy import select

from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import InvalidManifest, ModelExists
from services.api.graphql.models.types import ModelType
from shared.db.catalog import RegisteredModel
from shared.manifest import ManifestError, parse_manifest_text

RegisterModelResult = Annotated[
    ModelType | InvalidManifest | ModelExists, strawberry.union("RegisterModelResult")
]


def _register(deps: ApiDeps, owner_id: int, text: str) -> Any:
    try:
        manifest = parse_manifest_text(text, source="manifest")
    except ManifestError as exc:
        return InvalidManifest(message=str(exc), field="manifest", problems=list(exc.problems))
    with deps.db() as session:
        exists = session.scalar(
            select(RegisteredModel.id).where(
                RegisteredModel.name == manifest.name, RegisteredModel.version == manifest.version
            )
        )
        if exists is not None:
            # Versions are immutable: results recorded against one must stay explainable.
            return ModelExists(
                message=f"version: {manifest.ref} is registered already; bump the version",
                field="version",
            )
        session.add(
            RegisteredModel(
                name=manifest.name,
                version=manifest.version,
                framework=manifest.framework.name,
                manifest_yaml=text,
                manifest=manifest.to_dict(),
                owner_id=owner_id,
            )
        )
    return ModelType.from_manifest(manifest, "registered")


@strawberry.type
class ModelMutations:
    @strawberry.mutation
    async def register_model(self, info: strawberry.Info, manifest: str) -> RegisterModelResult:
        owner = info.context.require_user()
        result: Any = await in_thread(_register, info.context.deps, owner, manifest)
        return result
