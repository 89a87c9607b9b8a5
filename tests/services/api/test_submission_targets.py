"""A data-parallel gang's targets: distinct agents, each rank's local rank on its host, and
a scaling the live agents cannot fill refused at submission, naming worldSizes."""

from __future__ import annotations

from services.api.rejections import Rejection
from services.api.submission_targets import gang_of
from services.core.constraints import AgentView


def _agent(agent_id: str, host: str) -> AgentView:
    return AgentView(agent_id, host, "inference.torch.cpu", "torch", "2.4.0", "cpu")


AGENTS = [_agent("c", "host-2"), _agent("a", "host-1"), _agent("b", "host-1")]


def test_ranks_get_their_index_among_the_ranks_on_their_host() -> None:
    gang = gang_of(AGENTS, 3, {"kind": "training-scaling", "world_size": 3})
    assert not isinstance(gang, Rejection)
    pins, infos = gang
    assert pins == [["agent=a"], ["agent=b"], ["agent=c"]]
    places = [(i["rank"], i["local_rank"], i["host_ranks"]) for i in infos if i is not None]
    # a and b share host-1 (local ranks 0 and 1); c is alone on host-2.
    assert places == [(0, 0, 2), (1, 1, 2), (2, 0, 1)]


def test_a_pin_to_one_agent_keeps_its_group_record_as_it_is() -> None:
    # The accuracy + performance pair pins each pass to the first matching agent.
    record = {"kind": "accuracy-performance-pair", "role": "accuracy"}
    gang = gang_of(AGENTS, 1, record)
    assert not isinstance(gang, Rejection)
    assert gang == ([["agent=a"]], [record])


def test_a_gang_larger_than_the_live_agents_is_refused_naming_world_sizes() -> None:
    refused = gang_of(AGENTS, 4, {})
    assert isinstance(refused, Rejection) and refused.field == "worldSizes"
    assert "4 ranks need 4 live agents" in refused.message and "1..3" in refused.message


def test_the_first_gang_is_checked_against_the_largest_later_one() -> None:
    refused = gang_of(AGENTS, 1, {}, largest=8)
    assert isinstance(refused, Rejection) and refused.field == "worldSizes"
    assert "8 ranks" in refused.message and refused.accepted == ["1..3"]
    accepted = gang_of(AGENTS, 1, {}, largest=3)
    assert not isinstance(accepted, Rejection) and len(accepted[0]) == 1
