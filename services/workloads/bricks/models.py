"""The models a suite is generated from: catalogue names, manifest files, or builtin
architectures named as a manifest would (``torchvision:resnet34``), with random weights;
and ONNX models, as an ``.onnx`` file or a manifest of one (framework onnxruntime)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from services.core.architectures import ZOOS, architecture_problem
from services.core.catalogue import resolve_model
from services.core.manifest import ModelManifest, verify_model_files
from services.inference.backends import registry
from services.workloads.bricks.generate import ModelInput, OnnxModelInput, check_shape_options
from services.workloads.bricks.measure import Item
from services.workloads.bricks.suite import is_recipe_name, read_recipe, recipe_path
from services.workloads.torch_models import builds_torch_modules

DEFAULT_IMAGE_SHAPE: tuple[int, ...] = (3, 224, 224)


def is_onnx_file(spec: str) -> bool:
    return Path(spec).suffix.lower() == ".onnx"


def recipe_name(spec: str) -> str:
    """The name a model's recipe is kept under: the manifest's name, the architecture's,
    or an ONNX file's stem (characters a recipe name cannot hold become '_')."""
    if is_onnx_file(spec):
        return re.sub(r"[^A-Za-z0-9._-]", "_", Path(spec).stem)[:100]
    if spec.partition(":")[0] in ZOOS:
        return spec.partition(":")[2]
    return resolve_model(spec).name


def is_model_file_or_architecture(spec: str) -> bool:
    """Whether ``spec`` says itself how to build the model (an ONNX or manifest file, an
    architecture), as opposed to a bare name (a catalogue name, or a recipe's)."""
    path = Path(spec).expanduser()
    return (
        is_onnx_file(spec)
        or spec.partition(":")[0] in ZOOS
        or path.suffix in {".yaml", ".yml"}
        or path.is_file()
    )


def find_recipe(suite: Path, spec: str) -> dict[str, Any]:
    """The recipe of ``spec`` in ``suite``: for a file or an architecture, the recipe
    generate kept it under; for a bare name, the recipe of that name (any model generated
    into the suite, catalogue or not: ``googlenet`` after ``torchvision:googlenet`` or
    ``googlenet.yaml``), else a catalogue model's (``resnet18:1.0.0`` -> resnet18)."""
    if is_model_file_or_architecture(spec):
        return read_recipe(suite, recipe_name(spec))
    if is_recipe_name(spec) and recipe_path(suite, spec).exists():
        return read_recipe(suite, spec)
    try:
        name = recipe_name(spec)
    except ValueError as exc:  # ManifestError: neither a recipe nor a catalogue model
        known = sorted(p.stem for p in (suite / "recipes").glob("*.json"))
        raise ValueError(
            f"model: no recipe for {spec!r} in {suite}, and it is no catalogue name, manifest "
            f"file, architecture or ONNX file ({exc}); recipes in the suite: "
            f"{', '.join(known) or '(none)'}"
        ) from exc
    return read_recipe(suite, name)


def model_source(
    spec: str, *, batch_size: int = 1, image_size: int | None = None
) -> ModelInput | OnnxModelInput:
    """What ``bricks generate`` accepts: an ONNX file, a manifest whose framework is
    onnxruntime and whose source.file is an .onnx file, or any torch model
    ``model_input`` accepts."""
    check_shape_options(batch_size, image_size)
    path: Path | None = None
    name = recipe_name(spec) if is_onnx_file(spec) else ""
    if is_onnx_file(spec):
        path = Path(spec).expanduser()
        if not path.is_file():
            raise ValueError(f"model: {spec!r}: no such file; accepted: a path to an .onnx file")
    elif spec.partition(":")[0] not in ZOOS:
        manifest = resolve_model(spec)
        if registry.spec_for(manifest.framework.name).file_format == "onnx":
            if manifest.source.file is None:
                raise ValueError(
                    f"source.file: {spec!r} has none; accepted: an onnxruntime manifest whose "
                    "source.file is an .onnx file"
                )
            (path,) = verify_model_files(manifest)
            if not is_onnx_file(str(path)):
                raise ValueError(
                    f"source.file.path: {path.name!r} is not accepted; accepted: an .onnx file"
                )
            name = manifest.name
    if path is None:
        return model_input(spec, batch_size=batch_size, image_size=image_size)
    if image_size is not None:
        raise ValueError(
            f"image-size: {image_size} is not accepted for the ONNX model {name}: its shapes "
            "are the file's; accepted: leave --image-size out"
        )
    return OnnxModelInput(name, path, batch_size, durable_spec(spec))


def measurable(model: ModelInput | OnnxModelInput, threads: int = 0) -> Item:
    """The whole model as the bricks' harness calls a brick: a torch module on its example,
    or an onnxruntime session (``threads`` intra-op threads) on random inputs of the
    shapes the model has at its batch size."""
    if isinstance(model, ModelInput):
        return model.module.eval(), (model.example,)
    from services.workloads.bricks.measure_onnx import OnnxCallable, onnx_inputs
    from services.workloads.bricks.parse_onnx import dtype_name, load_onnx, parse_onnx

    proto = load_onnx(model.source, model.name)
    parsed = parse_onnx(proto, model.name, batch_size=model.batch_size)
    infos = [parsed.tensors[t] for t in parsed.graph_inputs]
    description = {
        "inputs": [list(i.shape) for i in infos],
        "input_types": [dtype_name(i.dtype) for i in infos],
    }
    # A file is opened by path, so weights kept beside it (external data) are found.
    source = model.source if isinstance(model.source, Path) else proto.SerializeToString()
    return OnnxCallable(source, threads), onnx_inputs(description)


def model_input(spec: str, *, batch_size: int = 1, image_size: int | None = None) -> ModelInput:
    """The module and a random example of the model's input shape at ``batch_size``."""
    check_shape_options(batch_size, image_size)
    if spec.partition(":")[0] not in ZOOS:
        built = manifest_model_input(
            resolve_model(spec), batch_size=batch_size, image_size=image_size, spec=spec
        )
        return replace(built, spec=durable_spec(spec))
    problem = architecture_problem(spec, "torch")
    if problem is not None:
        raise ValueError(problem)
    built = _built(spec, DEFAULT_IMAGE_SHAPE, spec.partition(":")[2], batch_size, image_size)
    return replace(built, spec=spec)


def durable_spec(spec: str) -> str:
    """``spec`` as a recipe keeps it: a file by its absolute path (a later command may run
    from another folder), anything else as given."""
    path = Path(spec).expanduser()
    return str(path.resolve()) if path.is_file() else spec


def manifest_model_input(
    manifest: ModelManifest,
    *,
    batch_size: int = 1,
    image_size: int | None = None,
    spec: str | None = None,
) -> ModelInput:
    """The model a manifest builds from an architecture (random weights), at ``batch_size``."""
    check_shape_options(batch_size, image_size)
    source = manifest.source.architecture
    if not builds_torch_modules(manifest.framework.name) or source is None:
        raise ValueError(
            f"model: {spec or manifest.name!r} is a {manifest.framework.name} model from "
            f"{source or 'a file'}; accepted: torch models built from an architecture, "
            "ONNX files, or onnxruntime manifests of an .onnx file"
        )
    return _built(source, tuple(manifest.inputs[0].shape), manifest.name, batch_size, image_size)


def _built(
    architecture: str,
    shape: tuple[int, ...],
    name: str,
    batch_size: int,
    image_size: int | None,
) -> ModelInput:
    from services.inference.backends.torch.architectures import build_architecture

    if image_size is not None:
        shape = (*shape[:-2], image_size, image_size)
    module = build_architecture(architecture)
    generator = torch.Generator().manual_seed(0)
    example = torch.randn((batch_size, *shape), generator=generator)
    return ModelInput(name, module, example)
