"""What a workload's measurement hands the backend: the agent's threads, the deployment's Triton."""

from __future__ import annotations

from services.inference.backends.base import BackendOptions
from services.workloads.agent_run import backend_options
from shared.messages import RunInference
from shared.settings import Settings

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
