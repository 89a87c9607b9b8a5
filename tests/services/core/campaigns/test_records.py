"""The campaign kinds' records read back rows stored before them, and their bounds refuse
with one message naming the field as the launcher calls it."""

from __future__ import annotations

import pytest

from services.core.campaigns import accuracy_performance_pair as pair
from services.core.campaigns import repeats, sweep
from services.core.campaigns.group import Done, InvalidCampaign


def test_rows_stored_before_the_records_read_back() -> None:
    # The embedded pair kept both run ids in `runs`; the stack keeps the id in group_id.
    old_pair = {"kind": pair.KIND, "id": "g", "runs": {"accuracy": "a"}, "role": "accuracy"}
    assert pair.PairMember.read(old_pair).stored() == {
        "kind": pair.KIND,
        "id": "g",
        "role": "accuracy",
    }
    old_point = {"kind": "sweep", "parameter": "batch_size", "value": 8.0}
    assert sweep.SweepMember.read(old_point, "g").value == 8
    assert repeats.RepeatsMember.read({"kind": "repeats", "index": 1, "count": 3}, "g").index == 1


def test_bounds_name_the_launcher_s_field() -> None:
    with pytest.raises(InvalidCampaign, match=r"^--repeats: 21; accepted: 2\.\.20$"):
        repeats.plan(21, field="--repeats")
    with pytest.raises(InvalidCampaign, match=r"^count: 1; accepted: 2\.\.20$"):
        repeats.plan(1)
    with pytest.raises(InvalidCampaign) as unknown:
        sweep.plan("threads", [1], "offline")
    assert unknown.value.field == "parameter" and unknown.value.accepted == list(sweep.PARAMETERS)
    with pytest.raises(InvalidCampaign, match=r"^values: batch size 5000; accepted: 1\.\.4096$"):
        sweep.plan("batch_size", [5000], "offline")


def test_all_members_start_then_the_summary_comes_when_all_are_stored() -> None:
    members = pair.plan(None)
    assert pair.next_step(members, []) == [m.start() for m in members]
    accuracy = {"run_id": "a", "group": members[0].stored(), "accuracy": {"top1": 90.0}}
    assert pair.next_step(members, [accuracy]) == []
    performance = {
        "run_id": "p",
        "group": members[1].stored(),
        "performance": {"samples_per_second": 5.0, "validity": {"result": "VALID"}},
        "stability": {"verdict": "STABLE"},
    }
    done = pair.next_step(members, [accuracy, performance])
    assert isinstance(done, Done)
    assert (done.summary.top1, done.summary.validity, done.summary.stability) == (
        90.0,
        "VALID",
        "STABLE",
    )
