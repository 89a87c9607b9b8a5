"""The model zoos the torch backend builds from (its config.py's ``zoos``): each one's names,
listed only when a manifest's architecture is checked."""

from __future__ import annotations

# Architectures benchstack defines itself (architectures.py builds them).
BENCHSTACK_ARCHITECTURES = ("digits_cnn",)


def torchvision_names() -> list[str]:
    import torchvision

    return sorted(torchvision.models.list_models())


def benchstack_names() -> list[str]:
    return list(BENCHSTACK_ARCHITECTURES)
