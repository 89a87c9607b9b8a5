"""A generative evaluation on an agent: measured in the child (the host held), stored as
generative.json, read back and made into the run's row with LoadGen's validity."""

from __future__ import annotations

import json
from pathlib import Path

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
