"""The datasets listing: image folders two levels down, bounded, and the query that serves it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.api import dataset_folders
from services.api.dataset_folders import DatasetListing, count_images, list_datasets
from tests.services.api.conftest import Api

REPO = Path(__file__).resolve().parents[3]


def _images(folder: Path, count: int, suffix: str = ".jpg") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"{i}{suffix}").write_bytes(b"not decoded by the listing")


def _tree(root: Path) -> None:
    _images(root / "imagenet" / "val" / "n01", 3)
    _images(root / "imagenet" / "val" / "n02", 2, ".JPEG")
    _images(root / "photos", 4, ".png")
    (root / "photos" / "notes.txt").write_text("not an image")
    (root / "empty").mkdir()
    _images(root / ".cache", 5)
    _images(root / "deep" / "a" / "b", 1)  # three levels down: listed as deep and deep/a


def test_folders_with_images_are_listed_with_counts_and_classes(tmp_path: Path) -> None:
    _tree(tmp_path)
    listed = {d.name: (d.images, d.more, d.classes) for d in list_datasets(tmp_path).items}
    assert listed == {
        "deep": (1, False, 1),
        "deep/a": (1, False, 1),
        "imagenet": (5, False, 2),
        "imagenet/val": (5, False, 2),
        "photos": (4, False, 0),
    }


def test_counting_stops_at_the_cap(tmp_path: Path) -> None:
    _images(tmp_path / "big", 12)
    assert count_images(tmp_path / "big", cap=10) == (10, True, 0)
    assert count_images(tmp_path / "big", cap=100) == (12, False, 0)


def test_the_listing_is_paged_with_the_count_of_all(tmp_path: Path) -> None:
    for i in range(5):
        _images(tmp_path / f"set{i}", i + 1)
    (tmp_path / "empty").mkdir()  # holds no image: neither listed nor counted
    first = list_datasets(tmp_path, first=3)
    assert [d.name for d in first.items] == ["set0", "set1", "set2"]
    assert (first.total_count, first.next_offset, first.complete) == (5, 3, True)
    rest = list_datasets(tmp_path, first=3, offset=first.next_offset or 0)
    assert [(d.name, d.images) for d in rest.items] == [("set3", 4), ("set4", 5)]
    assert (rest.total_count, rest.next_offset) == (5, None)


def test_more_folders_than_are_looked_at_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset_folders, "MAX_CANDIDATES", 4)
    for i in range(6):
        _images(tmp_path / f"set{i}", 1)
    listing = list_datasets(tmp_path)
    assert [d.name for d in listing.items] == ["set0", "set1", "set2", "set3"]
    assert (listing.total_count, listing.complete) == (4, False)


def test_no_datasets_folder_lists_nothing(tmp_path: Path) -> None:
    assert list_datasets(tmp_path / "absent") == DatasetListing([], 0, None)


def test_the_query_lists_the_shared_datasets_folder(api: Api) -> None:
    _tree(api.settings.datasets_dir)
    token = api.token("alice")
    data = api.data(
        token, "{ datasets { items { name images more classes } totalCount nextCursor } }"
    )
    named = {d["name"]: d for d in data["datasets"]["items"]}
    assert (data["datasets"]["totalCount"], data["datasets"]["nextCursor"]) == (5, None)
    assert named["imagenet/val"] == {
        "name": "imagenet/val",
        "images": 5,
        "more": False,
        "classes": 2,
    }
    # What the query lists, a submission can name.
    assert set(named) >= {"photos", "imagenet/val"}
    assert api.gql(None, "{ datasets { totalCount } }").status_code == 401


def test_the_query_pages_past_a_hundred_folders_and_counts_them_all(api: Api) -> None:
    # 105 folders: a fixed listing of 100 left five out of the web form, unsaid.
    for i in range(105):
        _images(api.settings.datasets_dir / f"set{i:03d}", 1)
    token = api.token("alice")
    query = (
        "query($after: String) { datasets(after: $after) { items { name } totalCount nextCursor } }"
    )
    names: list[str] = []
    after = None
    while True:
        page = api.data(token, query, {"after": after})["datasets"]
        assert page["totalCount"] == 105
        names += [d["name"] for d in page["items"]]
        after = page["nextCursor"]
        if after is None:
            break
    assert names == [f"set{i:03d}" for i in range(105)]
    small = api.data(token, '{ datasets(first: 2, after: "103") { items { name } nextCursor } }')
    assert small["datasets"] == {
        "items": [{"name": "set103"}, {"name": "set104"}],
        "nextCursor": None,
    }
    bad = api.data(token, '{ datasets(after: "x") { items { name } totalCount } }')
    assert bad["datasets"] == {"items": [], "totalCount": 105}


def test_links_out_of_the_datasets_folder_are_neither_listed_nor_counted(tmp_path: Path) -> None:
    shared, outside = tmp_path / "datasets", tmp_path / "host"
    _images(outside, 7)
    _images(shared / "photos", 2)
    (shared / "link_pix").symlink_to(outside)
    (shared / "photos" / "out.jpg").symlink_to(outside / "0.jpg")
    (shared / "photos" / "in.jpg").symlink_to(shared / "photos" / "0.jpg")
    listed = {d.name: d.images for d in list_datasets(shared).items}
    assert listed == {"photos": 3}


def test_the_web_forms_query_gets_the_first_page_and_the_count(api: Api) -> None:
    # The form (web/static/js/views/submit.js) lists the items and says how many more.
    queries = (REPO / "services/api/web/static/js/queries.js").read_text()
    form_choices = re.search(r"`(\s*query FormChoices[^`]*)`", queries)
    assert form_choices is not None
    for i in range(103):
        _images(api.settings.datasets_dir / f"set{i:03d}", 1)
    data = api.data(api.token("alice"), form_choices.group(1))
    listing = data["datasets"]
    assert len(listing["items"]) == 100
    assert (listing["totalCount"], listing["complete"]) == (103, True)
