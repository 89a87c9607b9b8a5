"""Conversion of PyTorch manifests to ONNX, for the ONNX Runtime and TensorRT backends.

``convert_to_onnx`` exports the model a torch manifest describes (builtin architecture,
weights or TorchScript file, exactly as the torch backend builds it) with a dynamic batch
axis, and writes next to the ``.onnx`` file a NEW manifest (framework onnxruntime) whose
``source.file`` carries the new file's sha256 and whose attributes record where it came
from. ``converted_onnx`` does the same into a cache folder keyed by the source manifest's
content hash, so a second run reuses the file.

torch is imported inside the functions: importing this module stays cheap for the CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from services.inference.backends.base import BackendError
from shared.manifest import (
    ManifestError,
    ModelManifest,
    load_manifest,
    sha256_of,
    verify_model_files,
)
from shared.settings import get_settings

Exporter = Literal["torchscript", "dynamo"]
EXPORTERS: tuple[Exporter, ...] = ("torchscript", "dynamo")
DEFAULT_OPSET = 17
# Large enough for the dynamic batch axis not to be specialised by a batch of 1.
_EXAMPLE_BATCH = 2


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


def _export(
    model: Any, example: Any, path: Path, manifest: ModelManifest, opset: int, exporter: Exporter
) -> None:
    import torch

    input_names = [i.layer_name for i in manifest.inputs[:1]]
    output_names = [o.layer_name for o in manifest.outputs[:1]]
    with torch.no_grad(), warnings.catch_warnings():
        if exporter == "torchscript":
            # The TorchScript exporter is deprecated in favour of dynamo, but it is the one
            # that writes the opset asked for (dynamo implements opset >= 18 only) and it
            # exports a CNN in a fraction of the time.
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                model,
                (example,),
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=input_names,
                output_names=output_names,
                dynamic_axes={name: {0: "batch"} for name in (*input_names, *output_names)},
            )
        else:
            batch = torch.export.Dim("batch", min=1, max=4096)
            program = torch.onnx.export(
                model,
                (example,),
                dynamo=True,
                opset_version=opset,
                external_data=False,
                input_names=input_names,
                output_names=output_names,
                dynamic_shapes=({0: batch},),
            )
            assert program is not None
            program.save(str(path), external_data=False)


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
    """Export a torch manifest's model to ``out_dir/<name>-<version>.onnx`` plus its manifest."""
    if manifest.framework.name != "torch":
        raise ConversionError(
            f"framework.name: only torch manifests convert to ONNX; got {manifest.framework.name!r}"
        )
    if exporter not in EXPORTERS:
        raise ConversionError(
            f"exporter: {exporter!r} is not accepted; accepted: {', '.join(EXPORTERS)}"
        )
    if len(manifest.inputs) != 1:
        raise ConversionError(
            f"inputs: conversion handles one input; the manifest has {len(manifest.inputs)}"
        )
    import torch

    from services.inference.backends.base import BackendOptions
    from services.inference.backends.torch.backend import TorchBackend

    # The torch backend builds the model, so the ONNX file holds exactly what it benchmarks
    # (same seeded weights, same checksum checks on weights and TorchScript files).
    torch_backend = TorchBackend(BackendOptions(device="cpu"))
    torch_backend.load(manifest)
    first = manifest.inputs[0]
    example = torch.zeros((_EXAMPLE_BATCH, *first.shape), dtype=getattr(torch, first.element_type))

    out_dir.mkdir(parents=True, exist_ok=True)
    onnx_path = out_dir / f"{_file_stem(manifest)}.onnx"
    _export(torch_backend.model, example, onnx_path, manifest, opset, exporter)
    digest = sha256_of(onnx_path)

    data = manifest.to_dict()
    data["framework"] = {"name": "onnxruntime", "version": ""}
    data["source"] = {"file": {"path": onnx_path.name, "sha256": digest}}
    data["attributes"] = {
        **data.get("attributes", {}),
        "converted_from": manifest.ref,
        "converted_from_sha256": manifest_sha256(manifest),
        "converter": f"torch {torch.__version__} ({exporter} exporter)",
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

    A torch manifest is converted (through the cache); a manifest whose ``source.file`` is
    an ``.onnx`` file is checked against its sha256 and used as it is.
    """
    if manifest.framework.name == "torch":
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
