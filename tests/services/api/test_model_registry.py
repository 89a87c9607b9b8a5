"""register_model: a manifest stored under its name and version, or a typed refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.api.auth import get_or_create_user
from services.api.model_registry import find_model, register_model
from services.api.rejections import Rejection
from services.core.catalogue import CATALOGUE_DIR
from services.core.manifest import ModelManifest
from shared import runtime

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


def test_a_shared_name_belongs_to_who_shared_it_first() -> None:
    assert isinstance(_register("alice", OWN, shared=True), ModelManifest)
    newer = OWN.replace("version: 1.0.0", "version: 2.0.0")
    assert _refusal(_register("mallory", newer, shared=True)) == ("ModelExists", "name")
    assert isinstance(_register("alice", newer, shared=True), ModelManifest)
    # Everyone else's "mine" is alice's shared one, the highest version.
    with runtime.db() as session:
        bob = get_or_create_user(session, "bob")
        session.flush()
        found = find_model(session, "mine", None, viewer_id=bob.id)
    assert found is not None and found[0].version == "2.0.0"


def test_a_private_name_is_never_refused_to_another_user_nor_shadowed_by_theirs() -> None:
    """Refusing mallory's "mine" would tell her alice has a private model of that name."""
    assert isinstance(_register("alice", OWN), ModelManifest)
    assert isinstance(_register("mallory", OWN), ModelManifest)  # the same name and version
    assert isinstance(_register("mallory", OWN.replace("1.0.0", "1.1.0")), ModelManifest)
    with runtime.db() as session:
        alice = get_or_create_user(session, "alice")
        mallory = get_or_create_user(session, "mallory")
        session.flush()
        alices = find_model(session, "mine", None, viewer_id=alice.id)
        mallorys = find_model(session, "mine", None, viewer_id=mallory.id)
    assert alices is not None and alices[0].version == "1.0.0"
    assert mallorys is not None and mallorys[0].version == "1.1.0"
    # Sharing her own "mine" is mallory's right: alice keeps hers.
    assert isinstance(
        _register("mallory", OWN.replace("1.0.0", "3.0.0"), shared=True), ModelManifest
    )
    with runtime.db() as session:
        found = find_model(session, "mine", None, viewer_id=alice.id)
    assert found is not None and found[0].version == "1.0.0"


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
