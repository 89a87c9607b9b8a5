"""Small manifests built in code, for tests that feed backends tensors directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.core.manifest import ModelManifest, parse_manifest


def tensor_manifest(
    *,
    framework: str,
    source: dict[str, Any],
    shape: tuple[int, ...],
    name: str = "probe",
    framework_version: str = "",
    base_dir: Path | None = None,
    input_name: str = "input",
    output_name: str = "output",
) -> ModelManifest:
    """A manifest with one tensor input (no image decoding) and one tensor output."""
    return parse_manifest(
        {
            "name": name,
            "version": "1.0.0",
            "framework": {"name": framework, "version": framework_version},
            "inputs": [{"modality": "tensor", "layer_name": input_name, "shape": list(shape)}],
            "outputs": [{"modality": "tensor", "layer_name": output_name}],
            "source": source,
        },
        base_dir=None if base_dir is None else str(base_dir),
    )
