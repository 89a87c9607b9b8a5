"""k8s/: every manifest is valid for Kubernetes, and the pieces reference each other.

Schemas come from the kubernetes-validate package (strict: unknown fields are errors),
so no cluster or network is needed. Where kubectl (or kustomize) is installed, the
kustomizations are rendered and the output validated too.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

K8S = Path(__file__).resolve().parents[2] / "k8s"
BASE = K8S / "base"
OVERLAYS = sorted(path.parent for path in (K8S / "overlays").glob("*/kustomization.yaml"))

# The oldest Kubernetes the manifests promise to work on (k8s/README.md), and the newest
# the installed kubernetes-validate knows.
K8S_VERSIONS = ("1.31", kubernetes_validate.latest_version())

WORKLOAD_KINDS = {"Deployment", "Job"}
NON_ROOT_UID = 10001  # the Dockerfile's USER

Manifest = dict[str, Any]


# --- helpers ---------------------------------------------------------------------------


def load_documents(path: Path) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def base_manifests() -> list[Manifest]:
    return [doc for path in resource_files(BASE) for doc in load_documents(path)]


def kustomization(directory: Path) -> dict[str, Any]:
    doc = yaml.safe_load((directory / "kustomization.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def resource_files(directory: Path) -> list[Path]:
    return [directory / name for name in kustomization(directory).get("resources", [])]


def validation_error(manifest: Manifest, version: str) -> str | None:
    try:
        kubernetes_validate.validate(manifest, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = "/".join(str(part) for part in error.path)
        return f"{manifest['kind']}/{manifest['metadata']['name']} at {where}: {error.message}"
    except kubernetes_validate.SchemaNotFoundError as error:
        return str(error.message)
    return None


def by_kind(manifests: list[Manifest], kind: str) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def pod_spec(workload: Manifest) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def containers(workload: Manifest) -> Iterator[dict[str, Any]]:
    yield from pod_spec(workload).get("initContainers", [])
    yield from pod_spec(workload)["containers"]


def gpu_problems(deployment: Manifest) -> list[str]:
    spec = pod_spec(deployment)
    problems = []
    if not any(
        c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu") for c in spec["containers"]
    ):
        problems.append("no container has an nvidia.com/gpu limit")
    if not any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])):
        problems.append("no toleration for the nvidia.com/gpu taint")
    if not any(key.startswith("nvidia.com/gpu") for key in spec.get("nodeSelector", {})):
        problems.append("no nodeSelector for GPU nodes")
    return problems


def security_problems(workload: Manifest) -> list[str]:
    name = workload["metadata"]["name"]
    pod = pod_spec(workload).get("securityContext", {})
    problems = []
    if pod.get("runAsNonRoot") is not True:
        problems.append(f"{name}: runAsNonRoot is not true")
    if pod.get("runAsUser") != NON_ROOT_UID:
        problems.append(f"{name}: runAsUser is not the image's uid {NON_ROOT_UID}")
    for container in containers(workload):
        context = container.get("securityContext", {})
        if context.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}/{container['name']}: privilege escalation allowed")
        if context.get("runAsUser") == 0:
            problems.append(f"{name}/{container['name']}: runs as root")
    return problems


# --- fixtures --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manifests() -> list[Manifest]:
    return base_manifests()


@pytest.fixture(scope="module")
def deployments(manifests: list[Manifest]) -> dict[str, Manifest]:
    return by_kind(manifests, "Deployment")


# --- schemas ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("path", resource_files(BASE), ids=lambda path: path.name)
def test_manifest_is_valid_kubernetes(path: Path, version: str) -> None:
    documents = load_documents(path)
    assert documents, f"{path.name} is empty"
    errors = [validation_error(doc, version) for doc in documents]
    assert [error for error in errors if error] == []


def test_validation_rejects_a_broken_manifest(deployments: dict[str, Manifest]) -> None:
    misspelled = copy.deepcopy(deployments["benchstack-api"])
    container = pod_spec(misspelled)["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    assert validation_error(misspelled, K8S_VERSIONS[0])

    wrong_type = copy.deepcopy(deployments["benchstack-api"])
    wrong_type["spec"]["replicas"] = "two"
    assert validation_error(wrong_type, K8S_VERSIONS[0])


# --- kustomizations --------------------------------------------------------------------


@pytest.mark.parametrize("directory", [BASE, *OVERLAYS], ids=lambda d: str(d.relative_to(K8S)))
def test_kustomization_lists_every_file(directory: Path) -> None:
    config = kustomization(directory)
    listed = {
        *(name for name in config.get("resources", []) if not name.startswith("..")),
        *(patch["path"] for patch in config.get("patches", []) if "path" in patch),
    }
    present = {path.name for path in directory.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present, "kustomization.yaml and the folder disagree"


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda d: d.name)
def test_overlay_patches_target_base_resources(overlay: Path, manifests: list[Manifest]) -> None:
    known = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    for patch in kustomization(overlay).get("patches", []):
        for doc in load_documents(overlay / patch["path"]):
            assert (doc["kind"], doc["metadata"]["name"]) in known, patch["path"]


def test_images_are_mapped_by_the_kustomization(manifests: list[Manifest]) -> None:
    mapped = {image["name"] for image in kustomization(BASE).get("images", [])}
    used = {c["image"] for m in manifests if m["kind"] in WORKLOAD_KINDS for c in containers(m)}
    assert used <= mapped


def _kustomize_cli() -> list[str] | None:
    if kubectl := shutil.which("kubectl"):
        return [kubectl, "kustomize"]
    if kustomize := shutil.which("kustomize"):
        return [kustomize, "build"]
    return None


@pytest.mark.parametrize("directory", [BASE, *OVERLAYS], ids=lambda d: str(d.relative_to(K8S)))
def test_kustomize_build_renders_valid_manifests(directory: Path) -> None:
    cli = _kustomize_cli()
    if cli is None:
        pytest.skip("neither kubectl nor kustomize is installed; files are validated one by one")
    result = subprocess.run(
        [*cli, str(directory)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    rendered = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    namespace = kustomization(directory)["namespace"]
    for doc in rendered:
        assert validation_error(doc, K8S_VERSIONS[0]) is None
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace, doc["metadata"]["name"]


# --- workloads -------------------------------------------------------------------------


def test_the_expected_workloads_exist(manifests: list[Manifest]) -> None:
    components = {
        m["metadata"]["labels"]["app.kubernetes.io/component"]
        for m in manifests
        if m["kind"] in WORKLOAD_KINDS
    }
    assert components == {
        "api",
        "scheduler",
        "preprocess",
        "inference-cpu",
        "inference-gpu",
        "aggregator",
        "migrate",
        "pgbouncer",
    }
    job = by_kind(manifests, "Job")["benchstack-migrate"]
    assert pod_spec(job)["containers"][0]["args"] == ["db", "upgrade"]


def test_selectors_match_pod_labels(deployments: dict[str, Manifest]) -> None:
    for name, deployment in deployments.items():
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), name


def test_workloads_run_as_non_root(manifests: list[Manifest]) -> None:
    problems = [p for m in manifests if m["kind"] in WORKLOAD_KINDS for p in security_problems(m)]
    assert problems == []


def test_security_checker_catches_root(deployments: dict[str, Manifest]) -> None:
    broken = copy.deepcopy(deployments["benchstack-scheduler"])
    pod_spec(broken)["securityContext"]["runAsUser"] = 0
    pod_spec(broken)["containers"][0]["securityContext"] = {"runAsUser": 0}
    assert len(security_problems(broken)) == 3


def test_every_container_has_requests_and_limits(manifests: list[Manifest]) -> None:
    for workload in (m for m in manifests if m["kind"] in WORKLOAD_KINDS):
        for container in containers(workload):
            resources = container.get("resources", {})
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(kind, {})), (
                    f"{workload['metadata']['name']}/{container['name']} lacks {kind}"
                )


def test_inference_workers_have_guaranteed_qos(deployments: dict[str, Manifest]) -> None:
    for name in ("benchstack-inference-cpu", "benchstack-inference-gpu"):
        for container in containers(deployments[name]):
            requests = container["resources"]["requests"]
            limits = container["resources"]["limits"]
            assert requests["cpu"] == limits["cpu"] and requests["memory"] == limits["memory"], name


def test_env_sources_exist(manifests: list[Manifest]) -> None:
    config_maps = by_kind(manifests, "ConfigMap")
    secrets = by_kind(manifests, "Secret")
    for workload in (m for m in manifests if m["kind"] in WORKLOAD_KINDS):
        for container in containers(workload):
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets


def test_secrets_stay_out_of_the_config_map(manifests: list[Manifest]) -> None:
    for name, config_map in by_kind(manifests, "ConfigMap").items():
        for key in config_map.get("data", {}):
            assert not any(word in key for word in ("SECRET", "PASSWORD", "DATABASE_URL")), (
                f"{name}: {key} belongs in the Secret"
            )


def test_secret_values_are_marked_placeholders(manifests: list[Manifest]) -> None:
    for name, secret in by_kind(manifests, "Secret").items():
        assert "data" not in secret, f"{name}: use stringData, readable placeholders"
        for key, value in secret["stringData"].items():
            assert "change-me" in value or "example.internal" in value, f"{name}: {key}"


def test_agents_reach_postgres_through_the_pooler(manifests: list[Manifest]) -> None:
    """Inference agents take DATABASE_URL from the Secret's agent key, which names the
    pooler's Service; the pooler runs in transaction mode on that Service's port."""
    secrets = by_kind(manifests, "Secret")
    deployments = by_kind(manifests, "Deployment")
    service = by_kind(manifests, "Service")["benchstack-pgbouncer"]
    agent_url = secrets["benchstack-secrets"]["stringData"]["BENCHSTACK_AGENT_DATABASE_URL"]
    direct_url = secrets["benchstack-secrets"]["stringData"]["BENCHSTACK_DATABASE_URL"]
    assert agent_url.split("@")[1].startswith(f"{service['metadata']['name']}:")
    assert agent_url.split("@")[1].split("/")[1] == direct_url.split("@")[1].split("/")[1]
    pooler = pod_spec(deployments["benchstack-pgbouncer"])["containers"][0]
    settings = {e["name"]: e.get("value") for e in pooler["env"]}
    assert settings["POOL_MODE"] == "transaction"
    labels = deployments["benchstack-pgbouncer"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    port = agent_url.split("@")[1].split("/")[0].split(":")[1]
    assert [p["port"] for p in service["spec"]["ports"]] == [int(port)]
    for name in ("benchstack-inference-cpu", "benchstack-inference-gpu"):
        (container,) = pod_spec(deployments[name])["containers"]
        (entry,) = [e for e in container["env"] if e["name"] == "BENCHSTACK_DATABASE_URL"]
        reference = entry["valueFrom"]["secretKeyRef"]
        assert reference == {
            "name": "benchstack-secrets",
            "key": "BENCHSTACK_AGENT_DATABASE_URL",
        }, name


def test_api_has_probes_on_a_named_port(deployments: dict[str, Manifest]) -> None:
    container = pod_spec(deployments["benchstack-api"])["containers"][0]
    port_names = {port["name"] for port in container["ports"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] in port_names, probe


def test_api_service_selects_api_pods(
    manifests: list[Manifest], deployments: dict[str, Manifest]
) -> None:
    service = by_kind(manifests, "Service")["benchstack-api"]
    labels = deployments["benchstack-api"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    container = pod_spec(deployments["benchstack-api"])["containers"][0]
    port_names = {port["name"] for port in container["ports"]}
    assert all(port["targetPort"] in port_names for port in service["spec"]["ports"])


def test_gpu_deployment_requests_a_gpu(deployments: dict[str, Manifest]) -> None:
    assert gpu_problems(deployments["benchstack-inference-gpu"]) == []


def test_gpu_checker_catches_a_cpu_deployment(deployments: dict[str, Manifest]) -> None:
    assert len(gpu_problems(deployments["benchstack-inference-cpu"])) == 3


def test_hpa_scales_the_preprocess_deployment(
    manifests: list[Manifest], deployments: dict[str, Manifest]
) -> None:
    (hpa,) = by_kind(manifests, "HorizontalPodAutoscaler").values()
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"]) == ("apps/v1", "Deployment")
    assert target["name"] == "benchstack-preprocess"
    deployment = deployments[target["name"]]
    # A fixed replica count would be reset on every apply, fighting the autoscaler.
    assert "replicas" not in deployment["spec"]
    metrics = {m["resource"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Resource"}
    assert "cpu" in metrics
    # Utilization is relative to the CPU request; without one the HPA cannot compute it.
    assert all("cpu" in c["resources"]["requests"] for c in containers(deployment))
