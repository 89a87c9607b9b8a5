"""shared/server_paths: a path under the server's folders named relative to its folder,
inside sentences and keys too; nothing else changed."""

from __future__ import annotations

from pathlib import Path

from shared.server_paths import roots_of, server_roots, without_roots
from shared.settings import Settings


def test_paths_under_the_folders_are_named_relative_to_the_most_specific_one(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, datasets_dir=data / "datasets")
    roots = server_roots(settings)
    stored = {
        "dataset": {"name": f"{data}/datasets/photos/val", "samples": 3},
        "logs": {"summary": f"{data}/objects/runs/r1/attempt-1/summary.txt"},
        "hints": [f"dataset: no images in {data}/datasets/empty; add some"],
        f"{data}/datasets/x": [1.5, None, True],
        "other": "/usr/share/pixmaps and s3://bucket/key",
    }
    assert without_roots(stored, roots) == {
        "dataset": {"name": "photos/val", "samples": 3},
        "logs": {"summary": "runs/r1/attempt-1/summary.txt"},
        "hints": ["dataset: no images in empty; add some"],
        "x": [1.5, None, True],
        "other": "/usr/share/pixmaps and s3://bucket/key",
    }
    assert without_roots(str(data), roots) == "."


def test_a_folder_reached_through_a_link_is_hidden_by_both_spellings(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    roots = roots_of([link])
    assert without_roots([f"{link}/a", f"{real}/b"], roots) == ["a", "b"]


def test_relative_spellings_and_the_filesystem_root_are_never_roots() -> None:
    # "data" would match inside any path ("my/data/x"); "/" would strip every path.
    assert roots_of(["data", "/"]) == tuple(
        sorted({str(Path("data").absolute())}, key=len, reverse=True)
    )
    assert without_roots("my/data/x", roots_of(["data"])) == "my/data/x"
