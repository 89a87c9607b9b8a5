"""register_model: a manifest stored under its name and version, or a typed refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.api.auth import get_or_create_user
from services.api.model_registry import register_model
from services.api.rejections import Rejection
from shared import runtime
from shared.catalogue import CATALOGUE_DIR
from shared.manifest import ModelManifest

SHIPPED = (CATALOGUE_DIR / "resnet18.yaml").read_text()
OWN = SHIPPED.replace("name: resnet18", "name: mine")


@pytest.fixture(autouse=True)
def embedded_db(data_dir: Path) -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def _register(user: str, text: str, *, shared: bool = False) -> ModelManifest | Rejection:
    with runtime.db() as session:
        owner = get_or_create_user(session, user)
        session.flush()
        return register_model(
            session, runtime.settings(), owner_id=owner.id, text=text, shared=shared
        )


def _refusal(result: ModelManifest | Rejection) -> tuple[str, str]:
    assert isinstance(result, Rejection), result
    return result.kind, result.field


def test_a_version_is_registered_once() -> None:
    registered = _register("alice", OWN)
    assert isinstance(registered, ModelManifest)
    assert registered.ref == "mine:1.0.0"
    assert _refusal(_register("alice", OWN)) == ("ModelExists", "version")


def test_a_name_belongs_to_who_registered_it_first() -> None:
    assert isinstance(_register("alice", OWN), ModelManifest)
    newer = OWN.replace("version: 1.0.0", "version: 2.0.0")
    assert _refusal(_register("mallory", newer)) == ("ModelExists", "name")
    assert isinstance(_register("alice", newer), ModelManifest)


def test_a_catalogue_name_cannot_be_registered() -> None:
    assert _refusal(_register("alice", SHIPPED)) == ("ModelExists", "name")


def test_a_manifest_naming_a_file_outside_the_models_folder_is_invalid() -> None:
    escaping = OWN.replace(
        "source: {architecture: 'torchvision:resnet18'}",
        f"source: {{file: {{path: /etc/passwd, sha256: {'ab' * 32}}}}}",
    )
    assert escaping != OWN
    result = _register("alice", escaping)
    assert _refusal(result) == ("InvalidManifest", "manifest")
    assert isinstance(result, Rejection) and any("/etc/passwd" in p for p in result.problems)


def test_yaml_that_is_no_manifest_is_invalid() -> None:
    assert _refusal(_register("alice", "name: [unclosed")) == ("InvalidManifest", "manifest")
