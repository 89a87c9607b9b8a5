"""The datasets listing: image folders two levels down, bounded, and the query that serves it."""

from __future__ import annotations

from pathlib import Path

from services.api.dataset_folders import count_images, list_datasets
from tests.services.api.conftest import Api


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
    listed = {d.name: (d.images, d.more, d.classes) for d in list_datasets(tmp_path)}
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


def test_the_number_of_folders_is_bounded(tmp_path: Path) -> None:
    for i in range(5):
        _images(tmp_path / f"set{i}", 1)
    assert [d.name for d in list_datasets(tmp_path, max_folders=3)] == ["set0", "set1", "set2"]


def test_no_datasets_folder_lists_nothing(tmp_path: Path) -> None:
    assert list_datasets(tmp_path / "absent") == []


def test_the_query_lists_the_shared_datasets_folder(api: Api) -> None:
    _tree(api.settings.datasets_dir)
    token = api.token("alice")
    data = api.data(token, "{ datasets { name images more classes } }")
    named = {d["name"]: d for d in data["datasets"]}
    assert named["imagenet/val"] == {
        "name": "imagenet/val",
        "images": 5,
        "more": False,
        "classes": 2,
    }
    # What the query lists, a submission can name.
    assert set(named) >= {"photos", "imagenet/val"}
    assert api.gql(None, "{ datasets { name } }").status_code == 401


def test_links_out_of_the_datasets_folder_are_neither_listed_nor_counted(tmp_path: Path) -> None:
    shared, outside = tmp_path / "datasets", tmp_path / "host"
    _images(outside, 7)
    _images(shared / "photos", 2)
    (shared / "link_pix").symlink_to(outside)
    (shared / "photos" / "out.jpg").symlink_to(outside / "0.jpg")
    (shared / "photos" / "in.jpg").symlink_to(shared / "photos" / "0.jpg")
    listed = {d.name: d.images for d in list_datasets(shared)}
    assert listed == {"photos": 3}
