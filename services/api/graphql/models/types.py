"""GraphQL types of the models domain."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from services.api.graphql.scalars import to_json
from shared.manifest import ModelManifest


@strawberry.type(name="Model")
class ModelType:
    name: str
    version: str
    framework: str
    description: str
    # "registered" (through registerModel) or "catalogue" (shipped with benchstack).
    origin: str
    manifest: JSON

    @classmethod
    def from_manifest(cls, manifest: ModelManifest, origin: str) -> ModelType:
        return cls(
            name=manifest.name,
            version=manifest.version,
            framework=manifest.framework.name,
            description=manifest.description,
            origin=origin,
            manifest=to_json(manifest.to_dict()),
        )
