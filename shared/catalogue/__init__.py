"""The catalogue: manifests of real architectures shipped with benchstack."""

from __future__ import annotations

from pathlib import Path

from shared.manifest import ManifestError, ModelManifest, load_manifest

CATALOGUE_DIR = Path(__file__).parent


def catalogue_files() -> list[Path]:
    return sorted(CATALOGUE_DIR.glob("*.yaml"))


def list_catalogue() -> list[ModelManifest]:
    return [load_manifest(path) for path in catalogue_files()]


def resolve_model(name_or_path: str) -> ModelManifest:
    """A catalogue name ('resnet18', or 'resnet18:1.0.0') or a path to a manifest file."""
    path = Path(name_or_path).expanduser()
    if path.suffix in {".yaml", ".yml"} or path.is_file():
        return load_manifest(path)
    name, _, version = name_or_path.partition(":")
    for manifest in list_catalogue():
        if manifest.name == name and (not version or manifest.version == version):
            return manifest
    known = ", ".join(m.name for m in list_catalogue())
    raise ManifestError([f"model: {name_or_path!r} is not in the catalogue; known: {known}"])
