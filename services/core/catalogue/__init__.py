"""The catalogue: manifests of real architectures shipped with benchstack."""

from __future__ import annotations

from pathlib import Path

from services.core.manifest import ManifestError, ModelManifest, load_manifest
from services.core.semver import pick_version

CATALOGUE_DIR = Path(__file__).parent


def catalogue_files() -> list[Path]:
    return sorted(CATALOGUE_DIR.glob("*.yaml"))


def list_catalogue() -> list[ModelManifest]:
    return [load_manifest(path) for path in catalogue_files()]


def resolve_model(name_or_path: str) -> ModelManifest:
    """A catalogue name ('resnet18': its highest version, or 'resnet18:1.0.0') or a path
    to a manifest file."""
    path = Path(name_or_path).expanduser()
    if path.suffix in {".yaml", ".yml"} or path.is_file():
        return load_manifest(path)
    name, _, version = name_or_path.partition(":")
    # The API's rule too (services/api/model_registry.find_model): without a version, the
    # highest semantic version, never whichever file sorts first.
    shipped = [m for m in list_catalogue() if m.name == name]
    found = pick_version(shipped, lambda m: m.version, version or None)
    if found is not None:
        return found
    known = ", ".join(m.name for m in list_catalogue())
    raise ManifestError([f"model: {name_or_path!r} is not in the catalogue; known: {known}"])
