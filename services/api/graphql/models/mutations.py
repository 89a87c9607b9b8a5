"""registerModel: store a manifest (YAML) under its name and version."""

from __future__ import annotations

from typing import Annotated, Any

import strawberry
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.api.context import ApiDeps, in_thread
from services.api.graphql.errors import InvalidManifest, ModelExists
from services.api.graphql.models.types import ModelType
from services.api.submission import catalogue_names, manifest_problems, manifest_yaml_limits
from shared.db.catalog import RegisteredModel
from shared.manifest import ManifestError, ModelManifest, parse_manifest_text

RegisterModelResult = Annotated[
    ModelType | InvalidManifest | ModelExists, strawberry.union("RegisterModelResult")
]


def _refusal(session: Session, owner_id: int, manifest: ModelManifest) -> ModelExists | None:
    """Why this user may not register this name and version, if they may not."""
    if manifest.name in catalogue_names():
        # A registration must never stand in for a shipped model.
        return ModelExists(
            message=f"name: {manifest.name!r} is a catalogue model; choose another name",
            field="name",
        )
    exists = session.scalar(
        select(RegisteredModel.id).where(
            RegisteredModel.name == manifest.name, RegisteredModel.version == manifest.version
        )
    )
    if exists is not None:
        # Versions are immutable: results recorded against one must stay explainable.
        return _version_exists(manifest)
    first = session.execute(
        select(RegisteredModel.owner_id)
        .where(RegisteredModel.name == manifest.name)
        .order_by(RegisteredModel.created_at, RegisteredModel.id)
        .limit(1)
    ).first()
    if first is not None and first.owner_id != owner_id:
        # A name belongs to whoever registered it first: nobody else's newer version may
        # become what the name means (submissions without a version take the highest).
        return ModelExists(
            message=f"name: {manifest.name!r} is registered by another user; choose another name",
            field="name",
        )
    return None


def _version_exists(manifest: ModelManifest) -> ModelExists:
    return ModelExists(
        message=f"version: {manifest.ref} is registered already; bump the version",
        field="version",
    )


def _register(deps: ApiDeps, owner_id: int, text: str, shared: bool) -> Any:
    try:
        limits = manifest_yaml_limits(deps.settings)
        manifest = parse_manifest_text(text, source="manifest", limits=limits)
    except ManifestError as exc:
        return InvalidManifest(message=str(exc), field="manifest", problems=list(exc.problems))
    problems = manifest_problems(manifest, deps.settings)
    if problems:
        return InvalidManifest(
            message="\n".join(f"manifest: {p}" for p in problems),
            field="manifest",
            problems=problems,
        )
    try:
        with deps.db() as session:
            refusal = _refusal(session, owner_id, manifest)
            if refusal is not None:
                return refusal
            # Stored as sent: relative paths are anchored in the models folder each time
            # the model is submitted (services.api.submission.confine_manifest).
            session.add(
                RegisteredModel(
                    name=manifest.name,
                    version=manifest.version,
                    framework=manifest.framework.name,
                    manifest_yaml=text,
                    manifest=manifest.to_dict(),
                    owner_id=owner_id,
                    shared=shared,
                )
            )
            session.flush()
    except IntegrityError:
        # Another request registered the same name and version between the check and
        # the insert: the unique constraint decided, and this one lost.
        return _version_exists(manifest)
    return ModelType.from_manifest(manifest, "registered", shared=shared)


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
        result: Any = await in_thread(_register, info.context.deps, owner, manifest, shared)
        return result
