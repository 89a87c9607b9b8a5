"""datasets: the image folders a submission's ``dataset`` can name, beside "synthetic"."""

from __future__ import annotations

import strawberry

from services.api.context import ApiDeps, in_thread
from services.api.dataset_folders import list_datasets


@strawberry.type(name="Dataset")
class DatasetType:
    name: str = strawberry.field(description="As a submission names it, e.g. imagenet/val.")
    images: int = strawberry.field(description="Images found, counting stops at 10000.")
    more: bool = strawberry.field(description="The count stopped before the last image.")
    classes: int = strawberry.field(description="Sub-folders holding images (labelled).")


def datasets_of(deps: ApiDeps) -> list[DatasetType]:
    return [
        DatasetType(name=d.name, images=d.images, more=d.more, classes=d.classes)
        for d in list_datasets(deps.settings.datasets_dir)
    ]


@strawberry.type
class DatasetQueries:
    @strawberry.field(description="Image folders in the datasets folder the workers share.")
    async def datasets(self, info: strawberry.Info) -> list[DatasetType]:
        info.context.require_user()
        return await in_thread(datasets_of, info.context.deps)
