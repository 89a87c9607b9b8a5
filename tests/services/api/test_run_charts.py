"""A run's chart data: latencies and trace spans read from its stored files, bounded in
size (deterministic downsampling that says so), limits refused with the field named, and
only for the evaluation's owner."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable

import numpy as np
import pytest

from services.api.run_charts import (
    LATENCIES_FILE,
    MAX_LATENCY_POINTS,
    TRACE_FILE,
    latency_sample,
    parse_trace,
    trace_timeline,
)
from shared.db.models import Run
from shared.db.session import session_scope
from tests.services.api.conftest import Api

QUICK = {"model": "resnet18", "framework": "null", "settings": {"minDurationS": 0.3}}
CHARTS = """query($id: String!, $points: Int!, $spans: Int!) { evaluation(id: $id) { runs {
  latencySample(limit: $points) { totalCount latenciesMs cumulativeFractions downsampled method }
  traceTimeline(limit: $spans) {
    totalSpans truncated note spans { name thread startMs durationMs }
  }
} } }"""


def npy(values: list[int] | np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(values, dtype=np.int64), allow_pickle=False)
    return buffer.getvalue()


def test_a_small_run_is_drawn_whole_and_sorted() -> None:
    sample = latency_sample(npy([3_000_000, 1_000_000, 2_000_000]), limit=10)
    assert sample.latencies_ms == [1.0, 2.0, 3.0]
    assert sample.cumulative_fractions == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert not sample.downsampled and sample.method == "all 3 samples"


def test_a_large_run_is_downsampled_to_order_statistics_with_its_ends() -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(1_000, 50_000_000, size=100_003)
    first = latency_sample(npy(values), limit=1_000)
    assert len(first.latencies_ms) == 1_000 and first.downsampled
    assert first.total_count == 100_003 and "1000 of 100003 samples" in first.method
    ordered = np.sort(values)
    assert first.latencies_ms[0] == ordered[0] / 1e6
    assert first.latencies_ms[-1] == ordered[-1] / 1e6
    assert first.cumulative_fractions[-1] == 1.0
    # Each point is exactly on the full CDF: its share is its rank's.
    points = zip(first.latencies_ms[::97], first.cumulative_fractions[::97], strict=True)
    for latency, share in points:
        rank = round(share * values.size) - 1
        assert ordered[rank] / 1e6 == latency
    assert latency_sample(npy(values), limit=1_000) == first  # deterministic


def trace(spans: list[tuple[str, float, float]]) -> dict[str, object]:
    events: list[dict[str, object]] = [
        {"name": n, "cat": "step", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 5}
        for n, ts, dur in spans
    ]
    events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 5, "args": {"name": "main"}})
    events.append({"name": "cpu", "ph": "C", "ts": 0, "pid": 1, "tid": 0, "args": {"v": 1}})
    events.append({"name": "broken", "ph": "X", "pid": 1, "tid": 5})  # no ts: left out
    return {"traceEvents": events}


def test_a_trace_above_the_limit_keeps_its_longest_spans_in_start_order() -> None:
    document = trace([("a", 0, 10_000), ("b", 100, 50), ("c", 200, 5_000), ("d", 300, 1)])
    timeline = trace_timeline(document, limit=2)
    assert [s.name for s in timeline.spans] == ["a", "c"]
    assert timeline.truncated and timeline.total_spans == 4
    assert timeline.note == "the 2 longest of 4 spans"
    assert timeline.spans[1].start_ms == 0.2 and timeline.spans[1].duration_ms == 5.0
    assert timeline.spans[0].thread == "main"
    whole = trace_timeline(document, limit=10)
    assert [s.name for s in whole.spans] == ["a", "b", "c", "d"] and not whole.truncated


def test_a_trace_that_is_not_json_says_so() -> None:
    assert parse_trace(b"{not json").startswith("trace.json is not JSON")  # type: ignore[union-attr]
    assert parse_trace(b"[1, 2]") == "trace.json is not a JSON object"


def stored_run(api: Api, evaluation_id: str, files: dict[str, bytes]) -> None:
    store = api.client.app.state.deps.store  # type: ignore[attr-defined]
    run_id = str(uuid.uuid4())
    keys = {}
    for name, data in files.items():
        keys[name] = f"runs/{run_id}/attempt-1/{name}"
        store.put_bytes(keys[name], data)
    with session_scope(api.settings.effective_database_url) as session:
        session.add(
            Run(
                id=run_id,
                evaluation_id=evaluation_id,
                model_name="resnet18",
                model_version="1.0.0",
                framework="null",
                framework_version="0",
                scenario="Offline",
                batch_size=1,
                dataset="synthetic",
                validity="VALID",
                manifest={},
                settings={},
                environment={},
                report={"log_keys": keys, "logs": keys},
                log_prefix="",
            )
        )


def test_the_owner_reads_bounded_chart_data_and_nobody_else_does(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice, bob = api.token("alice"), api.token("bob")
    created = api.data(alice, submit_query(), {"input": QUICK})["submitEvaluation"]
    document = trace([("a", 0, 10), ("b", 20, 30)])
    stored_run(
        api,
        created["id"],
        {LATENCIES_FILE: npy(list(range(1, 5_001))), TRACE_FILE: json.dumps(document).encode()},
    )
    variables = {"id": created["id"], "points": 100, "spans": 1}
    (run,) = api.data(alice, CHARTS, variables)["evaluation"]["runs"]
    sample = run["latencySample"]
    assert sample["totalCount"] == 5_000 and len(sample["latenciesMs"]) == 100
    assert sample["downsampled"] and sample["latenciesMs"][-1] == 5_000 / 1e6
    assert run["traceTimeline"]["spans"] == [
        {"name": "b", "thread": "main", "startMs": 0.02, "durationMs": 0.03}
    ]
    assert api.data(bob, CHARTS, variables)["evaluation"] is None


def test_limits_out_of_range_are_refused_naming_the_field(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice = api.token("alice")
    created = api.data(alice, submit_query(), {"input": QUICK})["submitEvaluation"]
    stored_run(api, created["id"], {LATENCIES_FILE: npy([1, 2, 3])})
    for points in (0, MAX_LATENCY_POINTS + 1):
        body = api.gql(alice, CHARTS, {"id": created["id"], "points": points, "spans": 5}).json()
        (error,) = body["errors"]
        assert error["message"] == (
            f"limit: {points} is out of range; accepted: 1 to {MAX_LATENCY_POINTS}"
        )
        assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_a_run_without_stored_files_has_no_chart_data(
    api: Api, submit_query: Callable[[], str]
) -> None:
    api.add_agent()
    alice = api.token("alice")
    created = api.data(alice, submit_query(), {"input": QUICK})["submitEvaluation"]
    stored_run(api, created["id"], {})
    variables = {"id": created["id"], "points": 10, "spans": 10}
    (run,) = api.data(alice, CHARTS, variables)["evaluation"]["runs"]
    assert run["latencySample"] is None and run["traceTimeline"] is None
