"""datasets: the image folders a submission's ``dataset`` can name, beside "synthetic",
a page at a time with the count of all."""

from __future__ import annotations

import strawberry

from services.api.context import ApiDeps, in_thread
from services.api.dataset_folders import MAX_CANDIDATES, MAX_FOLDERS, list_datasets
from services.api.graphql.evaluations.queries import parse_cursor


@strawberry.type(name="Dataset")
class DatasetType:
    name: str = strawberry.field(description="As a submission names it, e.g. imagenet/val.")
    images: int = strawberry.field(description="Images found, counting stops at 10000.")
    more: bool = strawberry.field(description="The count stopped before the last image.")
    classes: int = strawberry.field(description="Sub-folders holding images (labelled).")


@strawberry.type
class DatasetPage:
    items: list[DatasetType]
    total_count: int = strawberry.field(
        description="Folders holding images in all, on every page (see complete)."
    )
    next_cursor: str | None = strawberry.field(
        description="Pass as `after` for the next page; null on the last page."
    )
    complete: bool = strawberry.field(
        description=f"False when the datasets folder has more than {MAX_CANDIDATES} folders "
        f"two levels down: totalCount counts the first {MAX_CANDIDATES} by name."
    )


def datasets_of(deps: ApiDeps, first: int, offset: int | None) -> DatasetPage:
    # A cursor this API never made (None) reads past the last page: no items, the count.
    start = MAX_CANDIDATES if offset is None else offset
    listing = list_datasets(deps.settings.datasets_dir, first=first, offset=start)
    return DatasetPage(
        items=[
            DatasetType(name=d.name, images=d.images, more=d.more, classes=d.classes)
            for d in listing.items
        ],
        total_count=listing.total_count,
        next_cursor=str(listing.next_offset) if listing.next_offset is not None else None,
        complete=listing.complete,
    )


@strawberry.type
class DatasetQueries:
    @strawberry.field(
        description=f"Image folders in the datasets folder the workers share, by name, "
        f"`first` (at most {MAX_FOLDERS}) a page."
    )
    async def datasets(
        self, info: strawberry.Info, first: int = MAX_FOLDERS, after: str | None = None
    ) -> DatasetPage:
        info.context.require_user()
        return await in_thread(datasets_of, info.context.deps, first, parse_cursor(after))
