"""A find-peak's next probe keeps the threads its agent chose for the last one."""

from __future__ import annotations

from services.api.campaigns.find_peak.group import _threads_used
from shared.db.evaluations import Evaluation
from shared.db.models import Run


def _members(
    estimate_threads: int | None, probe_threads: int | None
) -> list[tuple[Evaluation, Run | None]]:
    def run(threads: int | None) -> Run:
        # As the aggregator stores a run: the threads the agent applied, in its settings.
        options = {} if threads is None else {"intra_op_threads": threads}
        return Run(id="r", report={"settings": {"backend_options": options}})

    return [
        (Evaluation(id="estimate"), run(estimate_threads)),
        (Evaluation(id="probe"), run(probe_threads)),
    ]


def test_the_threads_of_the_run_that_just_ended_are_kept() -> None:
    members = _members(estimate_threads=2, probe_threads=1)
    assert _threads_used(members, Evaluation(id="probe")) == 1
    assert _threads_used(members, Evaluation(id="estimate")) == 2


def test_a_backend_that_reports_no_threads_pins_none() -> None:
    members = _members(estimate_threads=None, probe_threads=None)
    assert _threads_used(members, Evaluation(id="probe")) is None
    assert _threads_used(members, Evaluation(id="elsewhere")) is None
