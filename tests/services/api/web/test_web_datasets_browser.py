"""The form's dataset select lists the image folders the workers share, and a run on one
chosen there reads that folder (with the threads the form asked for)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.support.ephemeral import EphemeralStack
from tests.support.web import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCREENSHOT = "/tmp/webui-dataset.png"


def _photos(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        pixels = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"{i}.jpg", quality=85)


def test_a_dataset_chosen_in_the_form_is_the_one_run(
    page: Any, stack: EphemeralStack, make_token: Callable[[str], str]
) -> None:
    from playwright.sync_api import expect

    _photos(stack.data_dir / "datasets" / "web-photos" / "cats", 3)
    _photos(stack.data_dir / "datasets" / "web-photos" / "dogs", 2)
    sign_in(page, make_token("dana-web"))
    page.get_by_role("link", name="New evaluation").first.click()
    dataset = page.get_by_label("Dataset")
    expect(dataset).to_contain_text("web-photos (5 images, 2 classes)")
    resnet = page.locator('select[name="model"] option', has_text=re.compile(r"^resnet18 "))
    page.get_by_label("Model").select_option(resnet.first.get_attribute("value"))
    dataset.select_option("web-photos")
    fields = {"framework": "null", "duration": "0.3", "samples": "5", "threads": "1"}
    for name, value in fields.items():
        page.fill(f'.submit-form [name="{name}"]', value)
    page.get_by_label("Scenario").select_option("offline")
    page.get_by_role("button", name="Submit evaluation").click()
    expect(page).to_have_url(re.compile(r"#/evaluations/[0-9a-f-]{36}$"))
    expect(page.locator('.status-state[data-state="SUCCEEDED"]')).to_be_visible(timeout=60_000)
    # The stored evaluation names the folder the workers read.
    expect(page.locator("main")).to_contain_text("web-photos")
    expect(page.locator("main")).to_contain_text("1 (asked)")  # the form's Threads
    cdf = page.locator('[data-chart="latency-cdf"]')
    expect(cdf).to_have_attribute("data-rendered", "yes", timeout=30_000)
    page.screenshot(path=SCREENSHOT, full_page=True)
