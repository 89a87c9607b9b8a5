"""What a workload's measurement hands the backend: the agent's threads, the deployment's Triton."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from services.core.messages import RunInference
from services.core.workload import AgentRun
from services.inference.backend_interface import BackendOptions
from services.workloads.agent_run import backend_options, measure_holding_host
from shared.runtime import Resources
from shared.settings import Settings
from shared.storage import LocalStore

AGENT_SETTINGS = {"intra_op_threads": 3}


def _message(framework: str, threads: int | None = None, **options: object) -> RunInference:
    return RunInference(
        threads=threads,
        evaluation_id="e",
        run_id="r",
        shard_keys=[],
        framework=framework,
        device="cpu",
        batch_size=1,
        scenario={},
        manifest={},
        backend_options=dict(options),
    )


# The deployment's settings: a Triton address every run falls back to.
DEPLOYMENT = Settings(triton_url="triton:8000", environment="test")


def options(message: RunInference, agent_settings: dict[str, int]) -> BackendOptions:
    return backend_options(message, agent_settings, DEPLOYMENT)


def test_the_agents_threads_apply_to_every_backend() -> None:
    assert options(_message("torch"), AGENT_SETTINGS).intra_op_threads == 3


def test_threads_the_evaluation_asks_for_win_over_the_agents() -> None:
    assert options(_message("torch", threads=1), AGENT_SETTINGS).intra_op_threads == 1
    assert options(_message("torch", threads=1), {}).intra_op_threads == 1


def test_triton_url_defaults_to_the_deployments_unless_the_submission_names_one() -> None:
    assert options(_message("triton"), AGENT_SETTINGS).extra == {"url": "triton:8000"}
    given = options(_message("triton", url="elsewhere:8001"), AGENT_SETTINGS)
    assert given.extra == {"url": "elsewhere:8001"}
    assert "url" not in options(_message("onnxruntime"), AGENT_SETTINGS).extra


def test_a_measurement_without_a_dataset_is_stored_with_the_hosts_load(tmp_path: Path) -> None:
    """What `bench` records of its host, a training or bricks run records too: the slot it
    held, the other processes' load over the measurement and whether that made it BUSY."""
    store = LocalStore(tmp_path / "store")
    settings = Settings(environment="test", host_slot_dir=tmp_path / "slot")
    run = AgentRun(
        message=_message("torch").model_copy(update={"workload": "training"}),
        agent_id="agent-1",
        prefix="runs/r/attempt-1",
        agent_settings={"intra_op_threads": 1},
        resources=Resources(settings=settings, db=None, open_store=lambda: store),  # type: ignore[arg-type]
    )

    def measurement(_: AgentRun, threads: int) -> dict[str, Any]:
        time.sleep(0.6)  # a window long enough for the kernel's CPU counters
        return {"kind": "example", "threads_given": threads}

    keys = measure_holding_host(run, measurement)
    document = json.loads(store.get_bytes(keys["training"]))
    host = document["host"]
    assert document["threads_given"] == 1 == host["threads"]
    assert host["exclusive"] and not host["overlapped"]
    assert isinstance(host["busy"], bool) and host["busy"] == host["load"]["busy"]
    assert host["load"]["wall_s"] >= 0.6 and host["load"]["reason"]
