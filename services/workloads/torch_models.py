"""Which models the torch-only workloads (DLBricks, training) accept."""

from __future__ import annotations

from services.core.workload import Acceptance
from shared.manifest import ModelManifest


def torch_architecture(why: str) -> Acceptance:
    """Accepts torch models built from an architecture (``why`` says what needs it)."""

    def accepts(framework: str, manifest: ModelManifest) -> str | None:
        if framework == "torch" and manifest.source.architecture is not None:
            return None
        return (
            f"the model runs on {framework} from "
            f"{manifest.source.architecture or 'a model file'}; accepted: torch models built "
            f"from an architecture ({why})"
        )

    return accepts
