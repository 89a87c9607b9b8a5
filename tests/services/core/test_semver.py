"""One rule picks a model's version in both modes: exact when asked, else the highest
semantic version (semver.org precedence)."""

from __future__ import annotations

import pytest

from services.core.catalogue import list_catalogue, resolve_model
from services.core.manifest import ManifestError
from services.core.semver import pick_version, semver_key


def test_semver_precedence() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.9.0",
        "1.10.0",
        "2.0.0",
    ]
    assert sorted(reversed(ordered), key=semver_key) == ordered
    assert semver_key("1.0.0+build.5") == semver_key("1.0.0")


def test_the_highest_version_is_picked_whatever_the_order() -> None:
    versions = ["1.9.0", "1.10.0", "1.10.0-rc.1", "0.2.0"]
    assert pick_version(versions, str, None) == "1.10.0"
    assert pick_version(reversed(versions), str, None) == "1.10.0"
    assert pick_version(versions, str, "1.9.0") == "1.9.0"
    assert pick_version(versions, str, "3.0.0") is None


def test_the_embedded_lookup_follows_the_rule() -> None:
    shipped = list_catalogue()[0]
    assert resolve_model(shipped.name).version == shipped.version
    assert resolve_model(f"{shipped.name}:{shipped.version}") == shipped
    with pytest.raises(ManifestError, match="not in the catalogue"):
        resolve_model(f"{shipped.name}:99.0.0")
