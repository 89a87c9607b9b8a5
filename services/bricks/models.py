"""The models a suite is generated from: catalogue names, manifest files, or builtin
architectures named as a manifest would (``torchvision:resnet34``), with random weights."""

from __future__ import annotations

import torch

from services.bricks.generate import ModelInput, check_shape_options
from shared.architectures import ZOOS, architecture_problem
from shared.catalogue import resolve_model
from shared.manifest import ModelManifest

DEFAULT_IMAGE_SHAPE: tuple[int, ...] = (3, 224, 224)


def recipe_name(spec: str) -> str:
    """The name a model's recipe is kept under: the manifest's name, or the architecture's."""
    if spec.partition(":")[0] in ZOOS:
        return spec.partition(":")[2]
    return resolve_model(spec).name


def model_input(spec: str, *, batch_size: int = 1, image_size: int | None = None) -> ModelInput:
    """The module and a random example of the model's input shape at ``batch_size``."""
    check_shape_options(batch_size, image_size)
    if spec.partition(":")[0] not in ZOOS:
        return manifest_model_input(
            resolve_model(spec), batch_size=batch_size, image_size=image_size, spec=spec
        )
    problem = architecture_problem(spec, "torch")
    if problem is not None:
        raise ValueError(problem)
    return _built(spec, DEFAULT_IMAGE_SHAPE, spec.partition(":")[2], batch_size, image_size)


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
    if manifest.framework.name != "torch" or source is None:
        raise ValueError(
            f"model: {spec or manifest.name!r} is a {manifest.framework.name} model from "
            f"{source or 'a file'}; accepted: torch models built from an architecture"
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
