"""compose.yaml: valid against the Compose Specification schema, and wired as designed.

The schema is the compose-spec JSON schema (Apache-2.0) that the check-jsonschema
package ships, so the test needs no network. Compose validates a file *after*
interpolating ${VAR} references, so the tests do the same with stand-in secrets.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

REQUIRED_SECRETS = frozenset({"BENCHSTACK_SECRET_KEY", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD"})
STAND_IN_SECRETS = {name: f"test-{name.lower().replace('_', '-')}" for name in REQUIRED_SECRETS}

INFRA_SERVICES = {"redis", "postgres", "pgbouncer", "minio", "jaeger"}
APP_SERVICES = {"migrate", "api", "scheduler", "preprocess", "inference-cpu", "aggregator"}
PROFILED_SERVICES = {"inference-gpu": ["gpu"], "triton": ["triton"], "inference-triton": ["triton"]}
WORKER_SERVICES = {
    "scheduler",
    "preprocess",
    "inference-cpu",
    "aggregator",
    "inference-gpu",
    "inference-triton",
}
INFERENCE_SERVICES = {"inference-cpu", "inference-gpu", "inference-triton"}
ONE_SHOT_SERVICES = {"migrate"}

# Every benchstack container must get these; the rest of Settings has usable defaults.
APP_ENVIRONMENT = {
    "BENCHSTACK_ENVIRONMENT",
    "BENCHSTACK_DATABASE_URL",
    "BENCHSTACK_BROKER_URL",
    "BENCHSTACK_S3_ENDPOINT",
    "BENCHSTACK_S3_ACCESS_KEY",
    "BENCHSTACK_S3_SECRET_KEY",
    "BENCHSTACK_S3_BUCKET",
    "BENCHSTACK_S3_SECURE",
    "BENCHSTACK_SECRET_KEY",
    "BENCHSTACK_OTLP_ENDPOINT",
    "BENCHSTACK_DATA_DIR",
}

Compose = dict[str, Any]


# --- helpers ---------------------------------------------------------------------------

# ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}; "$$" escapes a "$".
_INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\})"
)


class MissingVariableError(ValueError):
    pass


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Substitute variables the way compose does, for the forms compose.yaml uses."""

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name, op, arg = match["name"], match["op"], match["arg"]
        value = env.get(name)
        unset_or_empty = not value if op and op.startswith(":") else value is None
        if op in (":?", "?") and unset_or_empty:
            raise MissingVariableError(f"{name}: {arg}")
        if op in (":-", "-") and unset_or_empty:
            return arg
        return value or ""

    return _INTERPOLATION.sub(substitute, text)


def load_compose(text: str, env: Mapping[str, str] | None = None) -> Compose:
    doc = yaml.safe_load(interpolate(text, STAND_IN_SECRETS if env is None else env))
    assert isinstance(doc, dict)
    return doc


def schema_errors(doc: Compose, schema: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{error.json_path}: {error.message}"
        for error in sorted(validator.iter_errors(doc), key=lambda e: e.json_path)
    ]


def profiles_of(service: Mapping[str, Any]) -> set[str]:
    return set(service.get("profiles", []))


def dependency_problems(services: Mapping[str, Any]) -> list[str]:
    """depends_on targets exist, can be waited on as asked, and start in the same profiles."""
    problems = []
    for name, service in services.items():
        depends_on = service.get("depends_on", {})
        if isinstance(depends_on, list):
            depends_on = {target: {"condition": "service_started"} for target in depends_on}
        for target, spec in depends_on.items():
            if target not in services:
                problems.append(f"{name} depends on unknown service {target!r}")
                continue
            dependency = services[target]
            condition = spec.get("condition", "service_started")
            healthcheck = dependency.get("healthcheck", {})
            if condition == "service_healthy" and (
                not healthcheck.get("test") or healthcheck.get("disable")
            ):
                problems.append(f"{name} waits for {target} to be healthy; it has no healthcheck")
            if condition == "service_completed_successfully" and dependency.get("restart") not in (
                None,
                "no",
            ):
                problems.append(f"{name} waits for {target} to exit, but {target} restarts")
            # A dependency in a profile the dependent lacks is not started with it; a
            # service without profiles always starts, so its dependencies need none.
            needed, offered = profiles_of(service), profiles_of(dependency)
            if offered and not (needed and needed <= offered):
                problems.append(f"{name} depends on {target}, which is not in the same profiles")
    return problems


def gpu_reservation_problems(service: Mapping[str, Any]) -> list[str]:
    devices = (
        service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
    )
    nvidia = [
        device
        for device in devices
        if device.get("driver") == "nvidia" and "gpu" in device.get("capabilities", [])
    ]
    return [] if nvidia else ["no NVIDIA device reservation with capabilities [gpu]"]


def worker_role(service: Mapping[str, Any]) -> str:
    command = service["command"]
    assert command[0] == "worker", command
    return str(command[1])


# --- fixtures --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose_text(repo_root: Path) -> str:
    return (repo_root / "compose.yaml").read_text()


@pytest.fixture(scope="module")
def compose(compose_text: str) -> Compose:
    return load_compose(compose_text)


@pytest.fixture(scope="module")
def services(compose: Compose) -> dict[str, Any]:
    return dict(compose["services"])


@pytest.fixture(scope="module")
def compose_schema() -> dict[str, Any]:
    vendored = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    schema: dict[str, Any] = json.loads(vendored.read_text())
    return schema


# --- schema ----------------------------------------------------------------------------


def test_compose_file_matches_the_compose_spec_schema(
    compose: Compose, compose_schema: dict[str, Any]
) -> None:
    assert schema_errors(compose, compose_schema) == []


def _misspell_healthcheck(doc: Compose) -> None:
    doc["services"]["api"]["helthcheck"] = doc["services"]["api"].pop("healthcheck")


def _unknown_condition(doc: Compose) -> None:
    doc["services"]["api"]["depends_on"]["redis"]["condition"] = "service_ready"


def _device_without_capabilities(doc: Compose) -> None:
    devices = doc["services"]["inference-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    del devices[0]["capabilities"]


def _command_as_mapping(doc: Compose) -> None:
    doc["services"]["scheduler"]["command"] = {"worker": "scheduler"}


@pytest.mark.parametrize(
    "break_it",
    [_misspell_healthcheck, _unknown_condition, _device_without_capabilities, _command_as_mapping],
)
def test_schema_rejects_a_broken_copy(
    compose: Compose, compose_schema: dict[str, Any], break_it: Callable[[Compose], None]
) -> None:
    broken = copy.deepcopy(compose)
    break_it(broken)
    assert schema_errors(broken, compose_schema), f"{break_it.__name__} went unnoticed"


# --- services and profiles -------------------------------------------------------------


def test_services_and_profiles(services: dict[str, Any]) -> None:
    assert set(services) == INFRA_SERVICES | APP_SERVICES | set(PROFILED_SERVICES)
    for name in INFRA_SERVICES | APP_SERVICES:
        assert "profiles" not in services[name], f"{name} must start without a profile"
    for name, profiles in PROFILED_SERVICES.items():
        assert services[name].get("profiles") == profiles, name


def test_long_running_services_have_healthchecks(services: dict[str, Any]) -> None:
    missing = [
        name
        for name, service in services.items()
        if name not in ONE_SHOT_SERVICES and not service.get("healthcheck", {}).get("test")
    ]
    assert missing == []


def test_dependencies_exist_and_can_be_waited_on(services: dict[str, Any]) -> None:
    assert dependency_problems(services) == []


def test_dependency_checker_catches_mistakes(services: dict[str, Any]) -> None:
    broken = copy.deepcopy(services)
    broken["api"]["depends_on"]["cache"] = {"condition": "service_started"}
    del broken["redis"]["healthcheck"]
    broken["api"]["depends_on"]["triton"] = {"condition": "service_healthy"}
    broken["migrate"]["restart"] = "on-failure"
    problems = dependency_problems(broken)
    assert len(problems) >= 4, problems
    assert any("unknown service 'cache'" in p for p in problems)
    assert any("redis to be healthy" in p for p in problems)
    assert any("triton, which is not in the same profiles" in p for p in problems)
    assert any("migrate restarts" in p for p in problems)


def test_api_and_workers_wait_for_migrations(services: dict[str, Any]) -> None:
    assert services["migrate"]["command"] == ["db", "upgrade"]
    for name in {"api"} | WORKER_SERVICES:
        condition = services[name]["depends_on"].get("migrate", {}).get("condition")
        assert condition == "service_completed_successfully", name


def test_api_command_and_healthcheck(services: dict[str, Any]) -> None:
    api = services["api"]
    assert api["command"] == ["api", "--host", "0.0.0.0", "--port", "8000"]
    assert "/healthz" in " ".join(api["healthcheck"]["test"])
    assert any(str(port).endswith(":8000") for port in api["ports"])


def test_worker_healthchecks_ping_their_own_node(
    compose_text: str, services: dict[str, Any]
) -> None:
    raw_services = yaml.safe_load(compose_text)["services"]
    for name in WORKER_SERVICES:
        test = raw_services[name]["healthcheck"]["test"]
        command = test[1] if test[0] == "CMD-SHELL" else " ".join(test[1:])
        # "$$" so that compose leaves $HOSTNAME to the shell inside the container.
        node = f"-d {worker_role(services[name])}@$$HOSTNAME"
        assert "celery -A services.celery_main inspect ping" in command, name
        assert node in command, f"{name}: expected {node!r} in {command!r}"


def test_inference_workers_name_framework_and_device(services: dict[str, Any]) -> None:
    expected = {
        "inference-cpu": ("torch", "cpu"),
        "inference-gpu": ("torch", "cuda"),
        "inference-triton": ("triton", "cuda"),
    }
    for name, (framework, device) in expected.items():
        command = services[name]["command"]
        assert command[:2] == ["worker", "inference"], name
        assert command[command.index("--framework") + 1] == framework, name
        assert command[command.index("--device") + 1] == device, name


# --- secrets and environment -----------------------------------------------------------


def test_required_secrets_are_exactly_the_expected_ones(compose_text: str) -> None:
    required = set(re.findall(r"(?<!\$)\$\{(\w+):?\?", compose_text))
    assert required == REQUIRED_SECRETS


def test_secrets_never_fall_back_to_a_default(compose_text: str) -> None:
    for match in re.finditer(r"(?<!\$)\$\{(\w+)(:?[-?+])?", compose_text):
        name, op = match.group(1), match.group(2)
        if name in REQUIRED_SECRETS:
            assert op in (":?", "?"), f"${{{name}}} must be required, found op {op!r}"
        else:
            # An unset variable without a default silently becomes "" in compose.
            assert op is not None, f"${{{name}}} needs a default (:-) or must be required (:?)"


@pytest.mark.parametrize("missing", sorted(REQUIRED_SECRETS))
def test_compose_refuses_to_start_without_a_secret(compose_text: str, missing: str) -> None:
    env = {name: value for name, value in STAND_IN_SECRETS.items() if name != missing}
    with pytest.raises(MissingVariableError, match=missing):
        load_compose(compose_text, env)


def test_benchstack_services_get_the_settings(services: dict[str, Any]) -> None:
    for name, service in services.items():
        if name in INFRA_SERVICES or name == "triton":
            continue
        environment = service.get("environment", {})
        assert isinstance(environment, dict), f"{name}: use the mapping form"
        assert set(environment) >= APP_ENVIRONMENT, f"{name}: {APP_ENVIRONMENT - set(environment)}"
        assert environment["BENCHSTACK_SECRET_KEY"] == STAND_IN_SECRETS["BENCHSTACK_SECRET_KEY"]
        assert environment["BENCHSTACK_S3_SECRET_KEY"] == STAND_IN_SECRETS["MINIO_ROOT_PASSWORD"]


def test_urls_point_at_services_that_exist(services: dict[str, Any]) -> None:
    environment = services["api"]["environment"]
    password = STAND_IN_SECRETS["POSTGRES_PASSWORD"]
    database = urlsplit(environment["BENCHSTACK_DATABASE_URL"])
    assert database.hostname == "postgres" and database.password == password
    assert urlsplit(environment["BENCHSTACK_BROKER_URL"]).hostname == "redis"
    assert environment["BENCHSTACK_S3_ENDPOINT"].split(":")[0] == "minio"
    assert urlsplit(environment["BENCHSTACK_OTLP_ENDPOINT"]).hostname == "jaeger"
    postgres = services["postgres"]["environment"]
    assert postgres["POSTGRES_USER"] == database.username
    assert postgres["POSTGRES_DB"] == database.path.lstrip("/")


def test_agents_reach_postgres_through_the_pooler(services: dict[str, Any]) -> None:
    """The many (inference agents) through PgBouncer in transaction mode, as the same
    user and database; the few control-plane services directly (docs/scale.md)."""
    direct = urlsplit(services["api"]["environment"]["BENCHSTACK_DATABASE_URL"])
    pooler = services["pgbouncer"]["environment"]
    assert pooler["POOL_MODE"] == "transaction"
    assert (pooler["DB_HOST"], pooler["DB_PORT"]) == (direct.hostname, str(direct.port))
    assert (pooler["DB_USER"], pooler["DB_PASSWORD"], pooler["DB_NAME"]) == (
        direct.username,
        direct.password,
        direct.path.lstrip("/"),
    )
    assert int(pooler["DEFAULT_POOL_SIZE"]) < 100 <= int(pooler["MAX_CLIENT_CONN"])
    for name, service in services.items():
        url = urlsplit(service.get("environment", {}).get("BENCHSTACK_DATABASE_URL", ""))
        if name in INFERENCE_SERVICES:
            assert (url.hostname, url.port) == ("pgbouncer", 5432), name
            assert url._replace(netloc="") == direct._replace(netloc=""), name
            assert (url.username, url.password) == (direct.username, direct.password), name
            assert services[name]["depends_on"]["pgbouncer"]["condition"] == "service_healthy"
        elif url.hostname:
            assert url.hostname == "postgres", f"{name} goes to Postgres directly"


def test_named_volumes_are_declared_and_used(compose: Compose, services: dict[str, Any]) -> None:
    used = set()
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume.get("source")
            if source and not source.startswith((".", "/", "~")):
                used.add(source)
    assert used == set(compose.get("volumes", {}))


# --- GPU and Triton --------------------------------------------------------------------


def test_gpu_services_reserve_an_nvidia_gpu(services: dict[str, Any]) -> None:
    for name in ("inference-gpu", "triton"):
        assert gpu_reservation_problems(services[name]) == [], name
    assert services["inference-gpu"]["build"]["args"]["BASE_IMAGE"].startswith("nvidia/cuda:")


def test_gpu_checker_catches_a_missing_reservation(services: dict[str, Any]) -> None:
    broken = copy.deepcopy(services["inference-gpu"])
    broken["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] = ["compute"]
    assert gpu_reservation_problems(broken)
    assert gpu_reservation_problems(services["inference-cpu"])


def test_triton_serves_the_shared_model_repository(services: dict[str, Any]) -> None:
    triton = services["triton"]
    assert triton["image"].startswith("nvcr.io/nvidia/tritonserver:")
    container_ports = {str(port).rsplit(":", 1)[-1] for port in triton["ports"]}
    assert container_ports == {"8000", "8001", "8002"}
    repository = next(
        arg.split("=", 1)[1] for arg in triton["command"] if arg.startswith("--model-repository=")
    )
    volume = next(v.split(":")[0] for v in triton["volumes"] if v.split(":")[1] == repository)
    assert any(v.split(":")[0] == volume for v in services["inference-triton"]["volumes"])


def test_build_extras_exist_in_pyproject(
    services: dict[str, Any], project_extras: set[str]
) -> None:
    for name, service in services.items():
        extras = service.get("build", {}).get("args", {}).get("EXTRAS")
        if extras is not None:
            assert set(extras.split(",")) <= project_extras, name


# --- the real CLI, where there is one ---------------------------------------------------


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run(
            [docker, "compose", "version"], capture_output=True, text=True, timeout=20
        )
        if probe.returncode == 0:
            return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


@pytest.fixture(scope="module")
def compose_cli() -> list[str]:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no docker compose CLI (plugin or docker-compose) here; schema tests cover it")
    return cli


# A developer's .env would hide a missing secret: read none.
NO_ENV_FILE = ["--env-file", os.devnull]
ALL_PROFILES = ["--profile", "gpu", "--profile", "triton"]


def test_docker_compose_config_accepts_the_file(compose_cli: list[str], repo_root: Path) -> None:
    env = {**os.environ, **STAND_IN_SECRETS}
    result = subprocess.run(
        [*compose_cli, "-f", "compose.yaml", *NO_ENV_FILE, *ALL_PROFILES, "config", "-q"],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_docker_compose_config_refuses_missing_secrets(
    compose_cli: list[str], repo_root: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in REQUIRED_SECRETS}
    result = subprocess.run(
        [*compose_cli, "-f", "compose.yaml", *NO_ENV_FILE, "config", "-q"],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
