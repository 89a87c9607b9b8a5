"""The address a gang's rank 0 publishes: the one this host reaches the object store from,
never its hostname's (unresolvable in a container, 127.0.1.1 on Debian); and the interface
gloo talks on."""

from __future__ import annotations

import psutil
import pytest

from services.workloads.training.rendezvous_address import (
    advertised_address,
    gloo_interface,
    interface_of,
    store_host,
)


@pytest.mark.parametrize(
    ("endpoint", "host"),
    [
        ("", ""),
        ("minio:9000", "minio"),
        ("10.1.2.3:9000", "10.1.2.3"),
        ("https://s3.example.org", "s3.example.org"),
        ("http://[::1]:9000", "::1"),
    ],
)
def test_the_store_host_is_read_from_either_form_of_endpoint(endpoint: str, host: str) -> None:
    assert store_host(endpoint) == host


def _an_outside_address() -> str:
    """An address of this machine that is not loopback, or skip."""
    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family.name == "AF_INET" and not a.address.startswith("127."):
                return str(a.address)
    pytest.skip("this machine has no IPv4 address besides loopback")


def test_rank_0_publishes_its_address_towards_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHSTACK_RENDEZVOUS_HOST", raising=False)
    mine = _an_outside_address()
    # The store on this very address: the route to it starts from that address, whatever
    # the hostname resolves to.
    assert advertised_address(f"{mine}:9000") == mine
    assert advertised_address("127.0.0.1:9000") == "127.0.0.1"
    # A local-folder store: every rank is on this host.
    assert advertised_address("") == "127.0.0.1"


def test_the_setting_wins_and_an_unknown_store_host_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BENCHSTACK_RENDEZVOUS_HOST", "node-7.example")
    assert advertised_address("minio:9000") == "node-7.example"
    monkeypatch.delenv("BENCHSTACK_RENDEZVOUS_HOST")
    with pytest.raises(RuntimeError, match=r"'no-such-host\.invalid'.*BENCHSTACK_RENDEZVOUS_HOST"):
        advertised_address("no-such-host.invalid:9000")


def test_gloo_talks_on_the_interface_holding_the_address() -> None:
    assert interface_of("127.0.0.1") == gloo_interface("127.0.0.1")
    assert interface_of("127.0.0.1") is not None
    mine = _an_outside_address()
    assert gloo_interface(mine) == interface_of(mine) != interface_of("127.0.0.1")
    assert interface_of("203.0.113.77") is None  # TEST-NET-3: no interface holds it
    assert gloo_interface("no-such-host.invalid") is None
