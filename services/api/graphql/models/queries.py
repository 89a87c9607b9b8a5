"""Queries of the models domain: registered models, then the shipped catalogue."""

from __future__ import annotations

import strawberry
from sqlalchemy import select

from services.api.context import ApiDeps, in_thread
from services.api.graphql.models.types import ModelType
from services.core.catalogue import list_catalogue
from services.core.manifest import parse_manifest
from shared.db.catalog import RegisteredModel, visible_to


def list_models(deps: ApiDeps, viewer_id: int, name: str | None) -> list[ModelType]:
    """The viewer's own registered models, those shared by others, then the catalogue."""
    with deps.read_db() as session:
        query = (
            select(RegisteredModel)
            .where(visible_to(viewer_id))
            .order_by(RegisteredModel.name, RegisteredModel.created_at)
        )
        if name:
            query = query.where(RegisteredModel.name == name)
        registered = [
            ModelType.from_manifest(parse_manifest(row.manifest), "registered", shared=row.shared)
            for row in session.scalars(query)
        ]
    catalogue = [
        ModelType.from_manifest(m, "catalogue")
        for m in list_catalogue()
        if not name or m.name == name
    ]
    return registered + catalogue


@strawberry.type
class ModelQueries:
    @strawberry.field
    async def models(self, info: strawberry.Info, name: str | None = None) -> list[ModelType]:
        viewer = info.context.require_user()
        return await in_thread(list_models, info.context.deps, viewer, name)
