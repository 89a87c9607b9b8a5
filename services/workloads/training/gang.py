"""One rank of a data-parallel gang on an agent: meet the other ranks, train together with
DistributedDataParallel (services/workloads/training/scaling.train_rank), report this rank's steps.

The rendezvous: rank 0 picks a free port on its host and writes its address under the
gang's key in the object store (the store every agent of a stack already reaches); the
other ranks read it there, waiting up to ``RENDEZVOUS_TIMEOUT_S`` (a rank whose agent is
busy starts late). Rank 0's address is ``BENCHSTACK_RENDEZVOUS_HOST`` where set, else
its own address towards the object store (``rendezvous_address.py`` says why not its
hostname's). Gloo's own connections use ``GLOO_SOCKET_IFNAME`` where set, else the
interface that holds this rank's address towards rank 0 (loopback on one host).

The stack gives each rank its ``local_rank``, its index among the gang's ranks on its host
(services/api/submission_targets.gang_of), and the rank sets ``LOCAL_RANK`` from it, as
torchrun does: on GPUs it picks the device (scaling.cuda_index), never the global rank.
Threads are the host's share per rank, bounded by the process's CPU quota.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from services.workloads.training.rendezvous_address import advertised_address, gloo_interface
from services.workloads.training.scaling import RENDEZVOUS_TIMEOUT_S, free_port, train_rank
from services.workloads.training.throughput import TrainingSettings, result_of
from shared.cpu_quota import cpu_limit
from shared.storage import ObjectNotFound, ObjectStore

POLL_S = 0.2


def rendezvous_key(gang: str) -> str:
    return f"rendezvous/{gang}.json"


def _published(
    store: ObjectStore, key: str, timeout_s: float, sleep: Callable[[float], None]
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found: dict[str, Any] = json.loads(store.get_bytes(key))
            return found
        except ObjectNotFound:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"rendezvous: rank 0 published no address in {timeout_s:g} s "
                    f"({key}); is its agent live and free?"
                ) from None
            sleep(POLL_S)


def train_in_gang(
    settings: TrainingSettings,
    place: dict[str, Any],
    store: ObjectStore,
    *,
    store_endpoint: str = "",
    timeout_s: float = RENDEZVOUS_TIMEOUT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Train as rank ``place["rank"]`` of ``place["world_size"]``; the document of this rank:
    `benchstack train`'s figures, with throughput over the whole gang (N x batch / this
    rank's step time) and a ``data_parallel`` section (rank, world size, backend, the
    digest of the trained parameters, threads)."""
    rank, world = int(place["rank"]), int(place["world_size"])
    # Gangs stored before the stack gave local ranks: one rank per host was the norm.
    local_rank = int(place.get("local_rank", 0))
    os.environ["LOCAL_RANK"] = str(local_rank)
    key = rendezvous_key(str(place["gang"]))
    # Ranks sharing a host share its cores, as `benchstack train --workers N` shares them;
    # none gets more threads than its CPU quota lets it keep busy.
    host_ranks = max(1, int(place.get("host_ranks", 1)))
    threads = max(1, min(settings.threads, cpu_limit()) // host_ranks)
    settings = replace(settings, threads=threads)
    address: dict[str, Any]
    if rank == 0:
        address = {"host": advertised_address(store_endpoint), "port": free_port()}
        store.put_bytes(key, json.dumps(address).encode())
    else:
        address = _published(store, key, timeout_s, sleep)
    interface = gloo_interface(str(address["host"]))
    if interface:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", interface)
    # The key stays behind (a few bytes): a gang's key is never used by another gang.
    init_method = f"tcp://{address['host']}:{address['port']}"
    timed, digest = train_rank(rank, world, init_method, settings, local_rank)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = result_of(settings, timed, peak_rss, images_per_step=settings.batch_size * world)
    return {
        **result.as_dict(),
        "data_parallel": {
            "rank": rank,
            "local_rank": local_rank,
            "world_size": world,
            "gang": place["gang"],
            "backend": "nccl" if settings.device == "cuda" else "gloo",
            "threads_per_rank": threads,
            "weight_digest": digest,
            "rendezvous": address,
        },
    }
