"""A dataset prepared in this process into one of the stack's shards (shards.py), or the
shard found already complete: the embedded launcher's preprocess stage.

The shard is content-addressed (shard_keys.shard_key), so either mode reuses what the
other prepared. As the preprocess workers do, a shard is written with the samples that
failed named in its sidecar: a run that reuses it reports them again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.core.manifest import ModelManifest
from services.preprocess import shards
from services.preprocess.batch import finish
from services.preprocess.datasets import Dataset
from services.preprocess.device_decode import DECODER_NAME, decode_device, decoder_label
from services.preprocess.pipeline import Prepared, preprocess
from services.preprocess.shard_keys import files_digest, shard_key
from shared.host_load import usable_cpus
from shared.storage import ObjectStore


def _ignore(_: int) -> None:
    """A progress hook no one follows."""


@dataclass(frozen=True)
class LocalShard:
    """The shard a run measures, with how it was had."""

    key: str
    reused: bool
    decoder: str  # what decoded the JPEGs: "cpu", or "nvjpeg (cuda:0)"
    samples: int  # in the shard (the dataset's, less those that failed)
    asked: int  # the dataset's samples
    errors: list[str]
    processes: int | None  # that prepared it; None when reused
    seconds: float

    def dataset_section(self, name: str) -> dict[str, Any]:
        # Its "failed" samples are the measurement's (the shard's sidecar, as ShardSet reads).
        return {"name": name, "samples": self.samples}

    def preprocessing_section(self, fidelity: str) -> dict[str, Any]:
        return {
            "fidelity": fidelity,
            "decoder": self.decoder,
            "seconds": self.seconds,
            "reused": self.reused,
            "shard": self.key,
            # How the seconds were spent: samples and processes (none when reused).
            "samples": self.asked,
            "processes": self.processes,
        }


def _address(dataset: Dataset, manifest: ModelManifest, device: str) -> tuple[str, str]:
    """(shard key, decoder label): on a CUDA device the fast mode decodes there (nvJPEG),
    into a shard of its own."""
    spec = manifest.inputs[0]
    decoding_device = decode_device(spec, device)
    key = shard_key(
        [s.id for s in dataset.samples],
        spec,
        files_digest(dataset.samples),
        decoder=DECODER_NAME if decoding_device else "",
    )
    return key, decoder_label(decoding_device)


def _prepare(
    store: ObjectStore,
    dataset: Dataset,
    manifest: ModelManifest,
    device: str,
    key: str,
    on_start: Callable[[int], None],
    on_advance: Callable[[int], None],
) -> Prepared:
    """Prepare the samples (in this machine's processes) and store them as shard ``key``;
    the tensors stay in their stored form."""
    on_start(len(dataset.samples))
    prepared = preprocess(
        dataset.samples,
        manifest.inputs[0],
        progress=on_advance,
        processes=usable_cpus(),
        stored=True,
        device=device,
    )
    shards.write_shard(store, key, prepared)
    return prepared


def load_or_preprocess(
    store: ObjectStore,
    dataset: Dataset,
    manifest: ModelManifest,
    device: str = "cpu",
    *,
    on_start: Callable[[int], None] = _ignore,
    on_advance: Callable[[int], None] = _ignore,
) -> tuple[Prepared, bool, str]:
    """Prepared tensors for the dataset (as the model takes them), from its shard when
    complete: (tensors and how, reused, shard key). ``on_start`` hears the sample count,
    ``on_advance`` each chunk prepared."""
    spec = manifest.inputs[0]
    key, decoder = _address(dataset, manifest, device)
    if shards.is_complete(store, key):
        meta = shards.read_meta(store, key)
        reused = Prepared(
            tensors=finish(shards.decode_tensors(store.get_bytes(key)), spec),
            ids=meta["ids"],
            labels=meta["labels"],
            errors=list(meta.get("errors") or []),
            decoder=decoder,
        )
        return reused, True, key
    prepared = _prepare(store, dataset, manifest, device, key, on_start, on_advance)
    prepared.tensors = finish(prepared.tensors, spec)
    return prepared, False, key


def prepare_shard(
    store: ObjectStore,
    dataset: Dataset,
    manifest: ModelManifest,
    device: str = "cpu",
    *,
    on_start: Callable[[int], None] = _ignore,
    on_advance: Callable[[int], None] = _ignore,
) -> LocalShard:
    """The dataset's shard in ``store``, prepared here unless complete already (then only
    its sidecar is read: the run loads the tensors, outside its timed path)."""
    start = time.perf_counter()
    key, decoder = _address(dataset, manifest, device)
    if shards.is_complete(store, key):
        meta = shards.read_meta(store, key)
        count, errors, processes = len(meta["ids"]), list(meta.get("errors") or []), None
    else:
        prepared = _prepare(store, dataset, manifest, device, key, on_start, on_advance)
        count, errors = len(prepared.ids), [str(e) for e in prepared.errors]
        processes, decoder = prepared.processes, prepared.decoder
    return LocalShard(
        key=key,
        reused=processes is None,
        decoder=decoder,
        samples=count,
        asked=len(dataset.samples),
        errors=errors,
        processes=processes,
        seconds=time.perf_counter() - start,
    )
