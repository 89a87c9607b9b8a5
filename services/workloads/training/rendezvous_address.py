"""Where a gang's rank 0 is reached, and which interface gloo talks on.

Rank 0 publishes an address the other ranks connect to. Its hostname's address is not
one: on a host whose name no resolver knows (a container, a network namespace) it does
not resolve at all, and Debian's /etc/hosts maps the hostname to 127.0.1.1, which a rank
on another machine cannot reach. The address this host reaches the object store from is
one: every rank reaches that store (it is where the address is published), so the route
towards it is the route the others come back on. A store that is a local folder means
every rank shares this host: loopback.

Gloo binds to the interface named by ``GLOO_SOCKET_IFNAME`` or, unset, to whatever the
hostname resolves to, with the same two failures; so each rank names the interface that
holds its own address towards rank 0.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"
# Any port does: connecting a UDP socket sends nothing, it only picks the route.
_ANY_PORT = 9


def store_host(endpoint: str) -> str:
    """The host of an ``s3_endpoint`` ('host:port' or a URL); "" for none."""
    if not endpoint:
        return ""
    parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
    return parts.hostname or ""


def local_address_towards(host: str) -> str:
    """This host's own address on the route to ``host`` (a name or an address)."""
    family, _, _, _, target = socket.getaddrinfo(host, _ANY_PORT, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect(target)
        address: str = probe.getsockname()[0]
        return address


def advertised_address(store_endpoint: str) -> str:
    """What rank 0 publishes: ``BENCHSTACK_RENDEZVOUS_HOST`` where set, else its address
    towards the object store, else (a local-folder store) loopback."""
    explicit = os.environ.get("BENCHSTACK_RENDEZVOUS_HOST")
    if explicit:
        return explicit
    host = store_host(store_endpoint)
    if not host:
        return LOOPBACK
    try:
        return local_address_towards(host)
    except OSError as exc:
        raise RuntimeError(
            f"rendezvous: cannot tell this host's address towards the object store {host!r} "
            f"({exc}); set BENCHSTACK_RENDEZVOUS_HOST to the address other hosts reach it at"
        ) from exc


def interface_of(address: str) -> str | None:
    """The network interface that holds ``address``; None when none here does."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(a.address.split("%", 1)[0] == address for a in addresses):
            return name
    return None


def gloo_interface(rank0_host: str) -> str | None:
    """The interface this rank talks to rank 0 on; None when it cannot be told (gloo then
    falls back on its own choice)."""
    try:
        return interface_of(local_address_towards(rank0_host))
    except OSError:
        return None
