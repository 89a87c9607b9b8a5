"""The digits files and model: complete, labelled, and reproducible to the byte."""

from __future__ import annotations

from pathlib import Path

from services.core.manifest import load_manifest, verify_model_files
from services.digits.dataset import prepare


def test_prepare_writes_a_pinned_model_and_is_deterministic(tmp_path: Path) -> None:
    first = prepare(tmp_path / "a", seed=3, epochs=1)
    second = prepare(tmp_path / "b", seed=3, epochs=1)
    # Same seed, same machine: the same weights, byte for byte, hence the same sha256.
    assert first.sha256 == second.sha256
    manifest = load_manifest(first.manifest)
    assert manifest.source.weights is not None
    assert manifest.source.weights.sha256 == first.sha256
    assert verify_model_files(manifest) == [first.weights]
    train = sorted(first.train_dir.rglob("*.png"))
    test = sorted(first.test_dir.rglob("*.png"))
    assert len(train) + len(test) == 1797  # every sklearn digit, once
    assert not {p.name for p in train} & {p.name for p in test}
    assert sorted(p.name for p in first.test_dir.iterdir()) == [str(d) for d in range(10)]
    assert manifest.attributes.top1 == round(first.test_top1, 3)
