"""The multi-host stack's input checks and its hosts' layout; making namespaces is
tests/integration/test_multi_host.py's part."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.netns_stack import NetnsStack, main


@pytest.mark.parametrize("subnet", ["10.213", "8.8.8", "10.213.999", "fe80::1", "abc"])
def test_a_subnet_that_is_not_a_private_slash_24_is_refused(subnet: str) -> None:
    with pytest.raises(ValueError, match=r"subnet: .* private IPv4 /24"):
        NetnsStack(subnet=subnet, root="")


@pytest.mark.parametrize("agents", [0, 9])
def test_the_agent_count_is_bounded(agents: int) -> None:
    with pytest.raises(ValueError, match=r"agents: .* from 1 to 8"):
        NetnsStack(agents=agents, root="")


def test_each_host_has_its_own_address_hostname_and_folders(tmp_path: Path) -> None:
    stack = NetnsStack(agents=3, subnet="192.168.77", root=str(tmp_path))
    hosts = list(stack.hosts.values())
    assert [h.role for h in hosts] == [
        "db",
        "api",
        "prep",
        "client",
        "agent-1",
        "agent-2",
        "agent-3",
    ]
    assert len({h.address for h in hosts}) == len({h.hostname for h in hosts}) == len(hosts)
    assert all(h.address.startswith("192.168.77.") for h in hosts)
    envs = [stack.env_for(h) for h in hosts]
    for key in ("HOME", "BENCHSTACK_DATA_DIR", "BENCHSTACK_HOST_SLOT_DIR"):
        assert len({env[key] for env in envs}) == len(hosts), key
    # Every host reaches the servers and the API at their hosts' addresses only.
    for env in envs:
        assert env["BENCHSTACK_BROKER_URL"] == "redis://192.168.77.2:6379/0"
        assert env["BENCHSTACK_API_URL"] == "http://192.168.77.3:8000"
        assert "127.0.0.1" not in " ".join(env.values())


def test_the_command_line_names_what_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["up", "--subnet", "8.8.8"]) == 2
    assert "subnet: '8.8.8'" in capsys.readouterr().err
    assert main(["down", str(tmp_path)]) == 2
    assert f"root: {tmp_path} holds no netns-stack.json" in capsys.readouterr().err
