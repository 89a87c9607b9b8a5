"""GraphQL types of the models domain."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from services.api.graphql.scalars import to_json
from services.core.manifest import ModelManifest


@strawberry.type(name="Model")
class ModelType:
    name: str
    version: str
    framework: str
    description: str
    # "registered" (through registerModel) or "catalogue" (shipped with benchstack).
    origin: str
    # Whether every user may list, read and submit it; catalogue models always are,
    # a registered one only when its owner registered it with shared: true.
    shared: bool
    manifest: JSON

    @classmethod
    def from_manifest(
        cls, manifest: ModelManifest, origin: str, *, shared: bool = True
    ) -> ModelType:
        return cls(
            name=manifest.name,
            version=manifest.version,
            framework=manifest.framework.name,
            description=manifest.description,
            origin=origin,
            shared=shared,
            manifest=to_json(manifest.to_dict()),
        )
