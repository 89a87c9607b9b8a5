"""k8s/training/: the multi-node training run (an Indexed Job and its headless Service)
is valid Kubernetes, and its pieces agree: ranks, world size, rendezvous name."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.deploy.test_k8s_manifests import (
    K8S,
    K8S_VERSIONS,
    by_kind,
    containers,
    kustomization,
    load_documents,
    pod_spec,
    resource_files,
    security_problems,
    validation_error,
)

TRAINING = K8S / "training"


def manifests() -> list[dict]:
    return [doc for path in resource_files(TRAINING) for doc in load_documents(path)]


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", resource_files(TRAINING), ids=lambda path: path.name)
def test_training_manifests_are_valid_kubernetes(path: Path, version: str) -> None:
    errors = [validation_error(doc, version) for doc in load_documents(path)]
    assert [error for error in errors if error] == []


def test_the_kustomization_lists_every_file() -> None:
    listed = set(kustomization(TRAINING)["resources"])
    assert listed == {p.name for p in TRAINING.glob("*.yaml")} - {"kustomization.yaml"}


def test_ranks_world_size_and_rendezvous_agree() -> None:
    documents = manifests()
    job = by_kind(documents, "Job")["train"]
    service = by_kind(documents, "Service")["train"]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    args = shlex.split(" ".join(next(containers(job))["args"]))
    world = int(args[args.index("--world-size") + 1])
    assert spec["completions"] == spec["parallelism"] == world  # every rank runs at once
    assert args[args.index("--rank") + 1] == "$JOB_COMPLETION_INDEX"
    # Rank 0's stable name comes from the headless Service named by the pod's subdomain.
    assert service["spec"]["clusterIP"] == "None"
    assert pod_spec(job)["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    host, port = re.fullmatch(r"tcp://([^:]+):(\d+)", args[args.index("--rendezvous") + 1]).groups()  # type: ignore[union-attr]
    assert host == f"{job['metadata']['name']}-0.{service['metadata']['name']}"
    assert int(port) == service["spec"]["ports"][0]["port"]


def test_the_training_pods_run_as_non_root_with_bounded_resources() -> None:
    job = by_kind(manifests(), "Job")["train"]
    assert security_problems(job) == []
    for container in containers(job):
        assert container["resources"]["requests"] and container["resources"]["limits"]
    assert job["spec"]["activeDeadlineSeconds"] <= 24 * 3600


def test_each_rank_gets_a_node_of_its_own_and_local_rank_zero() -> None:
    job = by_kind(manifests(), "Job")["train"]
    anti = pod_spec(job)["affinity"]["podAntiAffinity"]
    (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]  # required, not preferred
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == {"app.kubernetes.io/component": "train"}
    env = {e["name"]: e for e in next(containers(job))["env"]}
    assert env["LOCAL_RANK"]["value"] == "0"  # one rank per pod: it uses the pod's GPU


def test_threads_follow_the_cpu_limit_of_a_guaranteed_pod() -> None:
    job = by_kind(manifests(), "Job")["train"]
    container = next(containers(job))
    resources = container["resources"]
    assert resources["limits"] == resources["requests"]  # Guaranteed QoS
    assert float(resources["limits"]["cpu"]) >= 1
    field = {e["name"]: e for e in container["env"]}["OMP_NUM_THREADS"]["valueFrom"]
    assert field["resourceFieldRef"]["resource"] == "limits.cpu"
    assert field["resourceFieldRef"]["containerName"] == container["name"]
