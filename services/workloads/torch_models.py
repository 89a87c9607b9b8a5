"""Which models the torch-only workloads (DLBricks, training) accept: those of a backend
whose spec says its architectures build torch modules (``architecture_models``)."""

from __future__ import annotations

from services.core.manifest import ModelManifest
from services.core.workload import Acceptance
from services.inference.backends import registry

TORCH_MODULES = "torch.nn.Module"


def builds_torch_modules(framework: str) -> bool:
    """Whether ``framework``'s architectures build torch modules (the torch backend's)."""
    spec = registry.specs().get(framework)
    return spec is not None and spec.architecture_models == TORCH_MODULES


def torch_architecture(why: str) -> Acceptance:
    """Accepts torch models built from an architecture (``why`` says what needs it)."""

    def accepts(framework: str, manifest: ModelManifest) -> str | None:
        if builds_torch_modules(framework) and manifest.source.architecture is not None:
            return None
        return (
            f"the model runs on {framework} from "
            f"{manifest.source.architecture or 'a model file'}; accepted: torch models built "
            f"from an architecture ({why})"
        )

    return accepts
