"""A workload's report section and web view come from its declaration
(Workload.report_section, Workload.web_view): `benchstack show`'s table, the shared HTML
report and its CSV render the section of the run's workload, and the run page's module is
the file its folder names. A LoadGen report keeps LoadGen's tables."""

from __future__ import annotations

import csv
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import services.workloads as workloads_package
from services.analysis.report_rows import CSV_COLUMNS, write_csv
from services.analysis.shared_report import render_html
from services.cli.render import print_report
from services.workloads import workloads
from services.workloads.surfaces import (
    report_section_of,
    section_columns,
    web_view_file,
    web_view_names,
)
from services.workloads.training.step_timing import summarise
from tests.support.throwaway_workload import write_workload_folder


def training_report() -> dict[str, Any]:
    """A stored training run's report, as services/aggregator/outcomes.py stores one."""
    statistics = summarise([0.10, 0.12, 0.11], [0.01, 0.01, 0.02], batch_size=8).as_dict()
    document = {
        "kind": "training",
        "settings": {"image_size": 64, "optimizer": "sgd"},
        "statistics": statistics,
        "peak_rss_bytes": 512 * 2**20,
    }
    return {"kind": "training", "run_id": "r-training", "training": document, "logs": {}}


@pytest.fixture
def dropped() -> Iterator[str]:
    """A throw-away workload folder that declares its surfaces, removed after."""
    folder = Path(workloads_package.__path__[0]) / f"surf{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    workloads.cache_clear()
    try:
        yield write_workload_folder(folder, "a throw-away workload with surfaces", surfaces=True)
    finally:
        shutil.rmtree(folder)
        workloads.cache_clear()


def _printed(report: dict[str, Any]) -> str:
    console = Console(width=200, record=True)
    print_report(console, report)
    return console.export_text()


def test_a_training_run_is_shown_by_its_section() -> None:
    report = training_report()
    section = report_section_of(report)
    assert section is not None and section.title == "training steps timed"
    rows = dict(section.rows)
    assert "image_size=64" in rows["settings"] and "optimizer=sgd" in rows["settings"]
    assert rows["peak_rss"] == "512 MiB"
    printed = _printed(report)
    assert "run r-training: training steps timed" in printed and "images_per_second" in printed
    images = section.columns["images_per_second"]
    assert section_columns(report)["training.images_per_second"] == images


def test_a_loadgen_report_has_no_section_and_keeps_its_table() -> None:
    assert report_section_of({"run_id": "r1", "performance": {}}) is None
    assert section_columns({"run_id": "r1"}) == {}


def test_the_csv_and_the_html_carry_each_runs_section(tmp_path: Path) -> None:
    report = training_report()
    table = tmp_path / "runs.csv"
    assert write_csv([report], table) == 1
    with table.open(newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert list(row)[: len(CSV_COLUMNS)] == list(CSV_COLUMNS)
    assert float(row["training.steps"]) == 3.0
    page = render_html("run r-training", [report], lambda _: ([], []))
    assert '<section class="workload-section">' in page
    assert "training steps timed" in page and "<th>data_share</th>" in page


def test_the_web_views_are_files_of_their_folders() -> None:
    view = web_view_file("training")
    assert view == Path(workloads_package.__path__[0]) / "training" / "web" / "view.js"
    assert web_view_file("loadgen") is None and web_view_file("no-such-kind") is None
    assert "training" in web_view_names() and "loadgen" not in web_view_names()


def test_a_dropped_in_folder_brings_its_section_and_view(dropped: str) -> None:
    document = {"kind": dropped, "echoed": 3}
    report = {"kind": dropped, "run_id": "r-echo", dropped: document}
    printed = _printed(report)
    assert f"echoes of {dropped}" in printed and "3 times" in printed
    assert section_columns(report) == {f"{dropped}.echoed": 3}
    view = web_view_file(dropped)
    assert view is not None and "export function sections" in view.read_text()
    assert dropped in web_view_names()


def test_todays_kinds_declare_their_sections() -> None:
    """bricks and training name a section that imports; LoadGen keeps its own tables."""
    from services.core.workload import entry

    for name in ("bricks", "training"):
        declared = workloads()[name].report_section
        assert declared is not None and callable(entry(declared))
    assert workloads()["loadgen"].report_section is None
