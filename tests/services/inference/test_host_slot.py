"""One measurement per host: a second measurement waits for the first, or, where sharing
was allowed, both record that they overlapped."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from services.inference.host_slot import HostSlot, HostUse, SlotWaitCancelled


def _measure_in_thread(
    slot: HostSlot,
    run_id: str,
    hold_s: float,
    uses: dict[str, HostUse],
    spans: dict[str, list[float]],
    *,
    gang: bool = False,
) -> threading.Thread:
    def body() -> None:
        with slot.measuring(run_id, poll_s=0.02, shared=gang) as use:
            spans[run_id] = [time.monotonic()]
            time.sleep(hold_s)
            spans[run_id].append(time.monotonic())
        uses[run_id] = use

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_exclusive_measurements_take_turns_and_record_no_overlap(tmp_path: Path) -> None:
    slot = HostSlot(tmp_path, exclusive=True)
    uses: dict[str, HostUse] = {}
    spans: dict[str, list[float]] = {}
    first = _measure_in_thread(slot, "first", 0.4, uses, spans)
    time.sleep(0.1)
    second = _measure_in_thread(slot, "second", 0.1, uses, spans)
    first.join()
    second.join()
    # The second started only after the first ended, and says it waited.
    assert spans["second"][0] >= spans["first"][1]
    assert uses["second"].waited_s >= 0.2
    assert not uses["first"].overlapped_with and not uses["second"].overlapped_with
    assert uses["second"].to_dict()["overlapped"] is False


def test_a_gangs_ranks_hold_the_host_together_and_a_lone_run_waits_for_them(
    tmp_path: Path,
) -> None:
    """Two ranks of one data-parallel gang on one host must run at once (each waits for
    the other in the all-reduce); a measurement that wants the host alone waits for both."""
    slot = HostSlot(tmp_path, exclusive=True)
    uses: dict[str, HostUse] = {}
    spans: dict[str, list[float]] = {}
    rank0 = _measure_in_thread(slot, "rank0", 0.4, uses, spans, gang=True)
    time.sleep(0.1)
    rank1 = _measure_in_thread(slot, "rank1", 0.4, uses, spans, gang=True)
    time.sleep(0.1)
    lone = _measure_in_thread(slot, "lone", 0.05, uses, spans)
    for thread in (rank0, rank1, lone):
        thread.join()
    assert spans["rank1"][0] < spans["rank0"][1]  # together
    assert uses["rank1"].waited_s < 0.1
    assert spans["lone"][0] >= max(spans["rank0"][1], spans["rank1"][1])  # after both
    assert "rank0" in uses["rank1"].overlapped_with
    assert uses["rank0"].to_dict()["exclusive"] is False
    assert uses["lone"].to_dict()["exclusive"] is True and not uses["lone"].overlapped_with


def test_shared_measurements_record_each_other(tmp_path: Path) -> None:
    slot = HostSlot(tmp_path, exclusive=False)
    uses: dict[str, HostUse] = {}
    spans: dict[str, list[float]] = {}
    long = _measure_in_thread(slot, "long", 0.5, uses, spans)
    time.sleep(0.1)
    # Starts and ends inside the long one: only the history tells the long one about it.
    short = _measure_in_thread(slot, "short", 0.1, uses, spans)
    long.join()
    short.join()
    assert uses["short"].to_dict()["overlapped_with"] == ["long"]
    assert uses["long"].to_dict()["overlapped_with"] == ["short"]
    assert uses["long"].to_dict()["exclusive"] is False


def test_a_cancel_while_waiting_for_the_host_ends_the_wait(tmp_path: Path) -> None:
    slot = HostSlot(tmp_path, exclusive=True)
    waiter = slot.measuring("waiter", should_stop=lambda: True, poll_s=0.01)
    with slot.measuring("holder"), pytest.raises(SlotWaitCancelled), waiter:
        pass


def test_an_entry_left_by_a_killed_run_is_no_overlap_once_its_pid_is_reused(
    tmp_path: Path,
) -> None:
    slot = HostSlot(tmp_path, exclusive=True)
    slot.active.mkdir(parents=True, exist_ok=True)
    # Written "before" this test process started: its pid is ours now, but the entry
    # belonged to a process that is gone.
    stale = {"pid": os.getpid(), "started": time.time() - 10 * 365 * 24 * 3600}
    (slot.active / "killed-run.json").write_text(json.dumps(stale))
    live = {"pid": os.getpid(), "started": time.time()}
    (slot.active / "live-run.json").write_text(json.dumps(live))
    with slot.measuring("mine") as use:
        pass
    assert set(use.overlapped_with) == {"live-run"}


def test_a_run_that_finds_the_host_taken_says_so_once_naming_the_holder(
    tmp_path: Path,
) -> None:
    waits: list[tuple[str, list[str]]] = []
    holder = HostSlot(tmp_path, exclusive=True)
    uses: dict[str, HostUse] = {}
    spans: dict[str, list[float]] = {}
    first = _measure_in_thread(holder, "first", 0.4, uses, spans)
    time.sleep(0.1)
    waiting = HostSlot(tmp_path, exclusive=True, on_wait=lambda h: waits.append(("second", h)))
    second = _measure_in_thread(waiting, "second", 0.05, uses, spans)
    first.join()
    second.join()
    # Told once, though it polled many times, with the run that held the host.
    assert waits == [("second", ["first"])]
    # A free host: no notice at all.
    alone = HostSlot(tmp_path, exclusive=True, on_wait=lambda h: waits.append(("third", h)))
    third = _measure_in_thread(alone, "third", 0.01, uses, spans)
    third.join()
    assert [w for w, _ in waits] == ["second"]
