"""The models a submission may name: the shipped catalogue and registered models, looked
up by name and version (one rule: the exact version, else the highest semantic version),
and registering one (GraphQL ``registerModel``)."""

from __future__ import annotations

from functools import lru_cache

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.api.confinement import manifest_problems, manifest_yaml_limits
from services.api.rejections import Rejection
from services.core.catalogue import list_catalogue
from services.core.manifest import (
    ManifestError,
    ModelManifest,
    parse_manifest,
    parse_manifest_text,
)
from services.core.semver import pick_version
from shared.db.catalog import RegisteredModel, visible_to
from shared.settings import Settings


@lru_cache(maxsize=1)
def _catalogue() -> tuple[ModelManifest, ...]:
    # The shipped manifests never change while the API runs; parse them once, not per request.
    return tuple(list_catalogue())


def catalogue_names() -> frozenset[str]:
    return frozenset(m.name for m in _catalogue())


def find_model(
    session: Session, name: str, version: str | None, *, viewer_id: int
) -> tuple[ModelManifest, str] | None:
    """The manifest a name (and version) stands for, and its origin: "catalogue" or
    "registered". Deterministic: the exact version if given, else the highest semantic
    version.

    A catalogue name always means the catalogue's model: registerModel refuses those names,
    and a registration stored before it did cannot shadow the shipped model. A registered
    name belongs to whoever registered it first; versions added by anyone else (only
    possible before registerModel checked ownership) are never chosen. A private model of
    another user is not found, exactly as a missing one.

    A viewer's own registrations of a name come first (names of private models are each
    owner's own); otherwise the name means the versions shared by whoever shared it first.

    Names are looked up, never read as paths: a request must not make the API read files.
    """
    if name in catalogue_names():
        shipped = [m for m in _catalogue() if m.name == name]
        found = pick_version(shipped, lambda m: m.version, version)
        return (found, "catalogue") if found is not None else None
    rows = list(
        session.scalars(
            select(RegisteredModel)
            .where(RegisteredModel.name == name)
            .order_by(RegisteredModel.created_at, RegisteredModel.id)
        )
    )
    candidates = [r for r in rows if r.owner_id == viewer_id]
    if not candidates:
        sharers = [r for r in rows if r.shared]
        if not sharers:
            return None
        candidates = [r for r in sharers if r.owner_id == sharers[0].owner_id]
    row = pick_version(candidates, lambda r: r.version, version)
    return (parse_manifest(row.manifest), "registered") if row is not None else None


def known_model_names(session: Session, *, viewer_id: int) -> list[str]:
    registered = session.scalars(
        select(RegisteredModel.name).where(visible_to(viewer_id)).distinct()
    )
    return sorted({*registered, *(m.name for m in _catalogue())})


def _version_exists(manifest: ModelManifest) -> Rejection:
    return Rejection(
        "ModelExists",
        f"version: {manifest.ref} is registered already; bump the version",
        field="version",
    )


def registration_refusal(
    session: Session, owner_id: int, manifest: ModelManifest, *, shared: bool = False
) -> Rejection | None:
    """Why this user may not register this name and version, if they may not. Only what
    the user may see decides: their own versions, and names other users shared; another
    user's private model of the same name is never mentioned (it is theirs alone)."""
    if manifest.name in catalogue_names():
        # A registration must never stand in for a shipped model.
        return Rejection(
            "ModelExists",
            f"name: {manifest.name!r} is a catalogue model; choose another name",
            field="name",
        )
    exists = session.scalar(
        select(RegisteredModel.id).where(
            RegisteredModel.owner_id == owner_id,
            RegisteredModel.name == manifest.name,
            RegisteredModel.version == manifest.version,
        )
    )
    if exists is not None:
        # Versions are immutable: results recorded against one must stay explainable.
        return _version_exists(manifest)
    if not shared:
        return None
    first = session.execute(
        select(RegisteredModel.owner_id)
        .where(RegisteredModel.name == manifest.name, RegisteredModel.shared.is_(True))
        .order_by(RegisteredModel.created_at, RegisteredModel.id)
        .limit(1)
    ).first()
    if first is not None and first.owner_id != owner_id:
        # A shared name belongs to whoever shared it first: nobody else's newer version
        # may become what it means to everyone (submissions without a version take the
        # highest). Shared models are public, so saying so reveals nothing private.
        return Rejection(
            "ModelExists",
            f"name: {manifest.name!r} is shared by another user; choose another name",
            field="name",
        )
    return None


def register_model(
    session: Session, settings: Settings, *, owner_id: int, text: str, shared: bool
) -> ModelManifest | Rejection:
    """Store the manifest ``text`` (YAML) under its name and version for ``owner_id``;
    private unless ``shared``. Refused with InvalidManifest or ModelExists."""
    try:
        manifest = parse_manifest_text(
            text, source="manifest", limits=manifest_yaml_limits(settings)
        )
    except ManifestError as exc:
        return Rejection("InvalidManifest", str(exc), field="manifest", problems=list(exc.problems))
    problems = manifest_problems(manifest, settings)
    if problems:
        return Rejection(
            "InvalidManifest",
            "\n".join(f"manifest: {p}" for p in problems),
            field="manifest",
            problems=problems,
        )
    refusal = registration_refusal(session, owner_id, manifest, shared=shared)
    if refusal is not None:
        return refusal
    # Stored as sent: relative paths are anchored in the models folder each time the model
    # is submitted (services.api.confinement.confine_manifest).
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
    try:
        session.flush()
    except IntegrityError:
        # Another request registered the same name and version between the check and the
        # insert: the unique constraint decided, and this one lost.
        session.rollback()
        return _version_exists(manifest)
    return manifest
