"""Node names: <kind>@host as probes ping it, suffixed only when the kind is taken here."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.stack.entry import split_frameworks
from services.stack.nodename import node_name


def test_first_worker_of_a_kind_gets_the_plain_name_later_ones_a_suffix(tmp_path: Path) -> None:
    assert node_name("inference", lock_dir=tmp_path) == "inference@%h"
    assert node_name("inference", lock_dir=tmp_path) == "inference-2@%h"
    assert node_name("scheduler", lock_dir=tmp_path) == "scheduler@%h"


def test_an_explicit_name_is_used_as_given(tmp_path: Path) -> None:
    assert node_name("inference", name="inference-gpu0", lock_dir=tmp_path) == "inference-gpu0@%h"
    with pytest.raises(ValueError, match="name: 'a b'"):
        node_name("inference", name="a b", lock_dir=tmp_path)


def test_frameworks_repeat_or_comma_separate() -> None:
    assert split_frameworks(["torch", "null,onnxruntime", ""]) == ["torch", "null", "onnxruntime"]
    assert split_frameworks(None) == []
