"""k8s/keda/: the base with preprocess workers scaled by KEDA on their Redis queue's length.
Its pieces agree (the ScaledObject's target, queue, authentication and secret), the base's
CPU autoscaler is gone (two would fight), and what Kubernetes knows is valid."""

from __future__ import annotations

import copy
import functools
import subprocess
from pathlib import Path

import pytest
import yaml

from shared import queues
from tests.deploy.test_k8s_manifests import (
    K8S,
    K8S_VERSIONS,
    Manifest,
    _kustomize_cli,
    base_manifests,
    by_kind,
    kustomization,
    load_documents,
    validation_error,
)

KEDA = K8S / "keda"
KEDA_KINDS = {"ScaledObject", "TriggerAuthentication"}  # KEDA's CRDs: no schema offline


def own_files() -> list[Path]:
    config = kustomization(KEDA)
    names = [n for n in config["resources"] if not n.startswith("..")]
    names += [patch["path"] for patch in config.get("patches", [])]
    return [KEDA / name for name in names]


@functools.cache
def _rendered() -> tuple[Manifest, ...]:
    return tuple(_render())


def rendered_or_assembled() -> list[Manifest]:
    """Rendered once per session (kubectl takes seconds); each caller gets its own copy."""
    return copy.deepcopy(list(_rendered()))


def _render() -> list[Manifest]:
    """What `kubectl kustomize k8s/keda` renders; without kubectl, the base less the CPU
    autoscaler plus this folder's resources, as the kustomization says."""
    cli = _kustomize_cli()
    if cli is not None:
        result = subprocess.run(
            [*cli, str(KEDA)], capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, result.stderr
        return [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    removed = {
        (doc["kind"], doc["metadata"]["name"])
        for patch in kustomization(KEDA)["patches"]
        for doc in load_documents(KEDA / patch["path"])
        if doc.get("$patch") == "delete"
    }
    kept = [m for m in base_manifests() if (m["kind"], m["metadata"]["name"]) not in removed]
    ours = [KEDA / n for n in kustomization(KEDA)["resources"] if not n.startswith("..")]
    return kept + [doc for path in ours for doc in load_documents(path)]


def test_the_kustomization_lists_every_file() -> None:
    assert {p.name for p in own_files()} == {p.name for p in KEDA.glob("*.yaml")} - {
        "kustomization.yaml"
    }


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_what_kubernetes_knows_is_valid(version: str) -> None:
    documents = [d for d in rendered_or_assembled() if d["kind"] not in KEDA_KINDS]
    errors = [validation_error(doc, version) for doc in documents]
    assert [error for error in errors if error] == []


def test_keda_scales_preprocess_on_its_queue_alone() -> None:
    documents = rendered_or_assembled()
    assert not by_kind(documents, "HorizontalPodAutoscaler"), "the CPU HPA would fight KEDA"
    (scaled,) = by_kind(documents, "ScaledObject").values()
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    target = scaled["spec"]["scaleTargetRef"]
    deployment = by_kind(documents, "Deployment")[target["name"]]
    assert deployment["metadata"]["labels"]["app.kubernetes.io/component"] == "preprocess"
    # A fixed replica count would be reset on every apply, fighting the autoscaler.
    assert "replicas" not in deployment["spec"]
    assert 1 <= scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis"
    assert trigger["metadata"]["listName"] == queues.PREPROCESS
    assert int(trigger["metadata"]["listLength"]) >= 1
    # The authentication it names exists and reads keys its secret has.
    auth = by_kind(documents, "TriggerAuthentication")[trigger["authenticationRef"]["name"]]
    secrets = by_kind(documents, "Secret")
    for ref in auth["spec"]["secretTargetRef"]:
        assert ref["key"] in secrets[ref["name"]]["stringData"], ref
    assert {r["parameter"] for r in auth["spec"]["secretTargetRef"]} == {"address", "password"}


def test_every_resource_lands_in_the_namespace() -> None:
    cli = _kustomize_cli()
    if cli is None:
        pytest.skip("neither kubectl nor kustomize is installed: nothing rendered to look at")
    namespace = kustomization(KEDA)["namespace"]
    for doc in rendered_or_assembled():
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace, doc["metadata"]["name"]
