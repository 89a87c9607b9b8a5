"""A generative evaluation on an agent: measured in the child (the host held), stored as
generative.json, read back and made into the run's row with LoadGen's validity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.core.messages import RunCompleted, RunInference
from services.core.workload import AgentRun, entry
from services.workloads import workload_named
from services.workloads.generative.outcome import generative_record
from shared.db.evaluations import Evaluation
from shared.runtime import Resources
from shared.settings import Settings
from shared.storage import LocalStore
from tests.support.streaming_server import streaming_server

OPTIONS = {
    "engine": "openai",
    "scenario": "server",
    "target_qps": 30.0,
    "bounds": "llama3.1-8b-interactive",
    "prompts": 3,
    "min_duration_s": 0.3,
    "min_query_count": 5,
}


def test_measured_stored_read_and_recorded(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    settings = Settings(environment="test", host_slot_dir=tmp_path / "slot")
    workload = workload_named("generative")
    conversations = tmp_path / "sharegpt.json"
    turns = [{"from": "human", "value": "kalo mine ru"}, {"from": "gpt", "value": "ta shi po"}]
    conversations.write_text(json.dumps([{"conversations": turns}] * 3))
    with streaming_server() as server:
        options = OPTIONS | {"url": server.url, "conversations_file": str(conversations)}  # type: ignore[attr-defined]
        message = RunInference(
            evaluation_id="e", run_id="r", shard_keys=[], framework="null", device="cpu",
            batch_size=1, scenario={}, manifest={}, workload="generative",
            workload_options=options,
        )  # fmt: skip
        run = AgentRun(
            message=message,
            agent_id="agent-1",
            prefix="runs/r/attempt-1",
            agent_settings={},
            resources=Resources(settings=settings, db=None, open_store=lambda: store),  # type: ignore[arg-type]
        )
        keys = entry(workload.measure)(run)
    completed = RunCompleted(
        evaluation_id="e", run_id="r", agent_id="agent-1", log_prefix=run.prefix, log_keys=keys
    )
    evaluation = Evaluation(id="e", model_name="tiny-llama", model_version="1")
    document = entry(workload.read)(evaluation, completed, store)
    assert document["bounds"]["ttft_ms"] == 500.0 and document["host"]["exclusive"]
    assert document["requests"]["failed"] == 0
    assert document["prompts"]["source"] == "conversations file"
    assert document["prompts"]["prompts"] == 3 and document["prompts"]["skipped"] == 0
    record = generative_record(evaluation, completed, document)
    assert record.validity == document["loadgen"]["validity"]
    assert record.scenario == "server"


def test_an_agent_serving_an_endpoint_is_measured_and_recorded(tmp_path: Path) -> None:
    """An openai run naming no url measures the agent's endpoint (its settings'
    endpoint_url and endpoint_model); the server's version and model entry are recorded in
    the run's environment."""
    store = LocalStore(tmp_path / "store")
    settings = Settings(environment="test", host_slot_dir=tmp_path / "slot")
    workload = workload_named("generative")
    options = {"engine": "openai", "prompts": 2, "input_tokens": "4", "output_tokens": "3",
               "min_duration_s": 0.2, "min_query_count": 4}  # fmt: skip
    with streaming_server() as server:
        endpoint = {"endpoint_url": server.url, "endpoint_model": "tiny"}  # type: ignore[attr-defined]
        message = RunInference(
            evaluation_id="e", run_id="r", shard_keys=[], framework="null", device="cpu",
            batch_size=1, scenario={}, manifest={}, workload="generative",
            workload_options=options,
        )  # fmt: skip
        run = AgentRun(
            message=message,
            agent_id="agent-1",
            prefix="runs/r/attempt-1",
            agent_settings={"intra_op_threads": 1, **endpoint},
            resources=Resources(settings=settings, db=None, open_store=lambda: store),  # type: ignore[arg-type]
        )
        keys = entry(workload.measure)(run)
    completed = RunCompleted(
        evaluation_id="e", run_id="r", agent_id="agent-1", log_prefix=run.prefix, log_keys=keys
    )
    document = entry(workload.read)(Evaluation(id="e"), completed, store)
    assert document["engine"]["url"] == endpoint["endpoint_url"]
    assert document["engine"]["model"] == "tiny" and document["requests"]["failed"] == 0
    recorded = document["environment"]["endpoint"]
    assert recorded["url"] == endpoint["endpoint_url"] and recorded["model"] == "tiny"
    assert recorded["reported"]["version"] == {"version": "streaming-server-1"}
    assert recorded["reported"]["models"] == [{"id": "tiny", "max_model_len": 1024}]
    assert document["agent"]["settings"]["endpoint_model"] == "tiny"


def test_an_openai_run_with_no_url_and_no_agent_endpoint_says_so() -> None:
    from services.workloads.generative.options import GenerativeOptions
    from services.workloads.generative.run import load_engine

    with pytest.raises(ValueError, match="BENCHSTACK_AGENT_ENDPOINT_URL"):
        load_engine(GenerativeOptions(engine="openai"))
    with pytest.raises(ValueError, match="only the openai engine"):
        GenerativeOptions(engine="transformers", url="http://127.0.0.1:1")
