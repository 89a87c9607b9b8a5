"""Conversion of manifests to ONNX, for the backends that run ONNX files.

``convert_to_onnx`` exports the model a manifest describes with the ``onnx_export`` its
backend's spec declares (torch's: builtin architecture, weights or TorchScript file,
exactly as the torch backend builds it) with a dynamic batch axis, and writes next to the
``.onnx`` file a NEW manifest (framework: the backend whose ``file_format`` is "onnx") whose
``source.file`` carries the new file's sha256 and whose attributes record where it came
from. ``converted_onnx`` does the same into a cache folder keyed by the source manifest's
content hash, so a second run reuses the file.

The framework is imported by the exporter only: importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from services.core.manifest import (
    ManifestError,
    ModelManifest,
    load_manifest,
    sha256_of,
    verify_model_files,
)
from services.inference.backend_interface import BackendError
from services.inference.backends import registry
from shared.settings import get_settings

Exporter = Literal["torchscript", "dynamo"]
EXPORTERS: tuple[Exporter, ...] = ("torchscript", "dynamo")
DEFAULT_OPSET = 17


class ConversionError(BackendError):
    """A manifest cannot be converted; the message names the field at fault."""


@dataclass(frozen=True)
class ConvertedModel:
    path: Path
    sha256: str
    manifest: ModelManifest


def manifest_sha256(manifest: ModelManifest) -> str:
    """Content hash of a manifest: sha256 of its canonical JSON (keys sorted, no base_dir).

    Two manifests that describe the same model the same way hash alike, wherever they
    were read from; any change to name, version, inputs, source or attributes changes it.
    """
    canonical = json.dumps(manifest.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _file_stem(manifest: ModelManifest) -> str:
    return f"{manifest.name}-{manifest.version}"


def _onnx_opset(path: Path) -> int:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)


def convert_to_onnx(
    manifest: ModelManifest,
    out_dir: Path,
    opset: int = DEFAULT_OPSET,
    exporter: Exporter = "torchscript",
) -> ConvertedModel:
    """Export a manifest's model to ``out_dir/<name>-<version>.onnx`` plus its manifest."""
    spec = registry.spec_for(manifest.framework.name)
    if spec.onnx_export is None:
        exporting = [s.name for s in registry.specs().values() if s.onnx_export is not None]
        raise ConversionError(
            f"framework.name: {manifest.framework.name!r} manifests do not convert to ONNX; "
            f"accepted: {', '.join(exporting)}"
        )
    if exporter not in EXPORTERS:
        raise ConversionError(
            f"exporter: {exporter!r} is not accepted; accepted: {', '.join(EXPORTERS)}"
        )
    if len(manifest.inputs) != 1:
        raise ConversionError(
            f"inputs: conversion handles one input; the manifest has {len(manifest.inputs)}"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx_path = out_dir / f"{_file_stem(manifest)}.onnx"
    # The backend's own exporter builds the model as that backend does, so the ONNX file
    # holds exactly what it benchmarks (same seeded weights, same checksum checks).
    export = registry.folder_entry(spec.name, spec.onnx_export)
    converter: str = export(manifest, onnx_path, opset=opset, exporter=exporter)
    digest = sha256_of(onnx_path)

    data = manifest.to_dict()
    data["framework"] = {"name": registry.with_file_format("onnx"), "version": ""}
    data["source"] = {"file": {"path": onnx_path.name, "sha256": digest}}
    data["attributes"] = {
        **data.get("attributes", {}),
        "converted_from": manifest.ref,
        "converted_from_sha256": manifest_sha256(manifest),
        "converter": converter,
        # What the file really holds, which can differ from what was asked for.
        "onnx_opset": _onnx_opset(onnx_path),
    }
    yaml_path = out_dir / f"{_file_stem(manifest)}.yaml"
    converted = ModelManifest.model_validate({**data, "base_dir": str(out_dir.resolve())})
    yaml_path.write_text(converted.to_yaml())
    return ConvertedModel(path=onnx_path, sha256=digest, manifest=converted)


def cache_key(manifest: ModelManifest, opset: int, exporter: Exporter) -> str:
    return hashlib.sha256(
        f"{manifest_sha256(manifest)}|opset={opset}|{exporter}".encode()
    ).hexdigest()


def _read_cached(folder: Path, manifest: ModelManifest) -> ConvertedModel | None:
    yaml_path = folder / f"{_file_stem(manifest)}.yaml"
    if not yaml_path.is_file():
        return None
    try:
        converted = load_manifest(yaml_path)
        (path,) = verify_model_files(converted)
    except (ManifestError, ValueError):
        return None  # damaged or edited by hand: convert again
    assert converted.source.file is not None
    return ConvertedModel(path=path, sha256=converted.source.file.sha256, manifest=converted)


def converted_onnx(
    manifest: ModelManifest,
    *,
    opset: int = DEFAULT_OPSET,
    exporter: Exporter = "torchscript",
    cache_dir: Path | None = None,
) -> ConvertedModel:
    """``convert_to_onnx`` into ``<data_dir>/converted/<key>/``, reusing an earlier result.

    The key hashes the source manifest's content, the opset and the exporter. A new
    conversion is written to a temporary folder and renamed into place, so two workers
    converting at once never see a half-written file.
    """
    root = cache_dir if cache_dir is not None else get_settings().data_dir / "converted"
    folder = root / cache_key(manifest, opset, exporter)
    cached = _read_cached(folder, manifest)
    if cached is not None:
        return cached
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=root))
    try:
        convert_to_onnx(manifest, staging, opset=opset, exporter=exporter)
        shutil.rmtree(folder, ignore_errors=True)  # a damaged earlier result
        # OSError: another process renamed its result in first; use that one.
        with contextlib.suppress(OSError):
            os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    result = _read_cached(folder, manifest)
    if result is None:
        raise ConversionError(
            f"source: conversion of {manifest.ref} left no readable result in {folder}"
        )
    return result


def onnx_file_for(manifest: ModelManifest, *, opset: int = DEFAULT_OPSET) -> tuple[Path, str]:
    """The checked ONNX file a backend should run, and the ``name:version`` it came from.

    A manifest of a backend that exports to ONNX (torch) is converted (through the cache);
    a manifest whose ``source.file`` is an ``.onnx`` file is checked against its sha256 and
    used as it is.
    """
    if registry.spec_for(manifest.framework.name).onnx_export is not None:
        return converted_onnx(manifest, opset=opset).path, manifest.ref
    if manifest.source.file is None:
        raise ConversionError(
            f"source.architecture: {manifest.source.architecture!r} cannot become ONNX; accepted: "
            "source.file with an .onnx file, or a torch manifest (converted to ONNX)"
        )
    (path,) = verify_model_files(manifest)
    if path.suffix.lower() != ".onnx":
        raise ConversionError(
            f"source.file.path: {path.name!r} is not accepted; accepted: an .onnx file"
        )
    return path, str(manifest.attributes.model_dump().get("converted_from", ""))
