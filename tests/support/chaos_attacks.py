"""Hostile callers against a chaos stack (tests/support/chaos.py), beside honest work: a
folder of image bombs, and loops of the too-costly 20-alias query. Each returns the honest
evaluations' Outcome, with a line on what became of the hostile part and what it cost."""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from typing import Any

import httpx
import psutil

from tests.support.bombs import write_bombs
from tests.support.chaos import FINAL, ChaosStack, Outcome

# Twenty aliases of the heaviest page: the query that once held the API for 15-33 s.
COSTLY_QUERY = (
    "{"
    + " ".join(
        f"a{i}: evaluations(first: 100) {{ items {{ runs {{ report environment "
        f"latencySample(limit: 20000) {{ latenciesMs }} }} }} }}"
        for i in range(20)
    )
    + "}"
)
PROBE_QUERY = "{ evaluations(first: 20) { totalCount items { id state } } }"


class PeakMemory:
    """The largest resident size of any process of the stack, sampled every 0.2 s."""

    def __init__(self, chaos: ChaosStack) -> None:
        self.chaos = chaos
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for running in self.chaos.group.running():
                try:
                    root = psutil.Process(running.pid)
                    for process in [root, *root.children(recursive=True)]:
                        self.peak_bytes = max(self.peak_bytes, process.memory_info().rss)
                except psutil.Error:
                    continue  # ended between the listing and the reading


def image_bombs(chaos: ChaosStack, *, in_flight: int, timeout_s: float) -> Outcome:
    """An evaluation of a folder of image bombs sent with ``in_flight`` honest ones."""
    write_bombs(chaos.stack.data_dir / "datasets" / "bombs")
    with PeakMemory(chaos) as memory:
        started = time.monotonic()
        bomb = chaos.submit(dataset="bombs", samples=None, seed=500)
        honest = [chaos.submit(seed=501 + i, samples=64) for i in range(in_flight)]
        outcome = chaos.settle("image bombs", honest, since=started, timeout_s=timeout_s)
        chaos.wait_state(bomb, lambda r: r["state"] in FINAL, timeout_s)
        took = time.monotonic() - started
    row = chaos.rows([bomb])[bomb]
    killed = "Killed" in chaos.logs() or "SIGKILL" in chaos.logs()
    outcome.hostile = (
        f"bomb {row['state']} within {took:.0f} s ({row['reason'][:90]}); largest process "
        f"{memory.peak_bytes / 2**20:.0f} MB; kernel kills: {'yes' if killed else 'none'}"
    )
    return outcome


def costly_queries(
    chaos: ChaosStack, *, loops: int, in_flight: int, seconds: float, timeout_s: float
) -> Outcome:
    """``loops`` callers send the 20-alias query for ``seconds`` while honest evaluations
    run and a probe times an ordinary query: others' latency is what the attack costs."""
    stop = threading.Event()
    answers: Counter[str] = Counter()
    probe_s: list[float] = []
    headers = {"Authorization": f"Bearer {chaos.token}"}
    url = chaos.stack.api_url + "/graphql"

    def attack() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                response = client.post(url, json={"query": COSTLY_QUERY}, headers=headers)
                errors = response.json().get("errors") if response.status_code == 200 else None
                code = errors[0]["extensions"]["code"] if errors else "served"
                answers[
                    code if response.status_code == 200 else f"HTTP {response.status_code}"
                ] += 1

    def probe() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                began = time.monotonic()
                client.post(url, json={"query": PROBE_QUERY}, headers=headers).raise_for_status()
                probe_s.append(time.monotonic() - began)
                time.sleep(0.05)

    threads = [threading.Thread(target=attack) for _ in range(loops)]
    threads.append(threading.Thread(target=probe))
    for thread in threads:
        thread.start()
    honest = [chaos.submit(seed=600 + i, samples=64) for i in range(in_flight)]
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    since = time.monotonic()
    outcome = chaos.settle(
        f"{loops} loops of the costly query", honest, since=since, timeout_s=timeout_s
    )
    ordered = sorted(probe_s)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else float("nan")
    median = statistics.median(ordered) if ordered else float("nan")
    outcome.hostile_answers = dict(answers)
    outcome.hostile = (
        f"{sum(answers.values())} answers ({', '.join(f'{k}: {v}' for k, v in answers.items())}); "
        f"an ordinary query meanwhile: median {median * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
        f"({len(ordered)} probes)"
    )
    return outcome
