"""Reading a dataset's files: confined by their resolved paths and bounded in bytes, both
checked before a byte is read.

Every read of a sample's bytes goes through here: the scheduler hashes them for the shard
keys (shard_keys.files_digest), the preprocess workers decode them (batch.read_sample),
under the same bound (``max_sample_bytes``). Each read resolves the file again, so a link
swapped in after the listing is caught too, and opens what it resolved to without
following a link, then checks with fstat that it is a regular file within the bound. A
file that fails is refused by name (FileRefused): that sample's error, as an undecodable
image is, while the others go on. The total of a dataset's files (``max_dataset_bytes``)
is a property of the evaluation, not of one sample: resolve_dataset refuses it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAX_FILE_SETTING = "BENCHSTACK_MAX_SAMPLE_BYTES"
MAX_DATASET_SETTING = "BENCHSTACK_MAX_DATASET_BYTES"
# Hashing reads this much at a time: the scheduler holds one chunk, never a whole file.
CHUNK_BYTES = 2**20
# Never the path a link leads to: the reason is stored and shown to the submitter.
OUTSIDE = "its link leads outside the datasets folder; accepted: files inside it"


@dataclass(frozen=True)
class Sample:
    """One file of a dataset."""

    id: str  # stable: the path relative to the dataset root
    path: Path
    label: int | None
    # The resolved folder the file must resolve inside when read (sample_files.real_path);
    # None: not checked (samples a benchmark builds from its own files).
    within: Path | None = None


class FileRefused(Exception):
    """One sample's file is not read; ``reason`` says why and what is accepted."""

    def __init__(self, sample_id: str, reason: str) -> None:
        super().__init__(f"{sample_id}: {reason}")
        self.sample_id = sample_id
        self.reason = reason


def too_large(size: int, max_bytes: int, *, at_least: bool = False) -> str:
    held = f"at least {size}" if at_least else f"{size}"
    return f"file of {held} bytes; accepted: at most {max_bytes} bytes ({MAX_FILE_SETTING})"


def _unreadable(exc: OSError | RuntimeError) -> str:
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"cannot read file: {text}"


def real_path(sample: Sample) -> Path:
    """The sample's file with every link resolved, inside ``sample.within``."""
    try:
        real = sample.path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a loop of links
        raise FileRefused(sample.id, _unreadable(exc)) from None
    if sample.within is not None and not real.is_relative_to(sample.within):
        raise FileRefused(sample.id, OUTSIDE)
    return real


@contextmanager
def opened(sample: Sample, max_bytes: int) -> Iterator[tuple[BinaryIO, int]]:
    """The sample's file open for reading and its size, checked: confined, regular,
    within the bound.

    O_NOFOLLOW: the resolved path's last part cannot have become a link since; O_NONBLOCK:
    a FIFO put in a file's place is refused by fstat instead of blocking the open."""
    real = real_path(sample)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise FileRefused(sample.id, _unreadable(exc)) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(sample.id, "not a regular file; accepted: image files")
        if info.st_size > max_bytes:
            raise FileRefused(sample.id, too_large(info.st_size, max_bytes))
        yield file, info.st_size


def read_bounded(sample: Sample, max_bytes: int) -> bytes:
    """The sample's bytes, at most ``max_bytes`` of them; FileRefused naming it otherwise."""
    try:
        with opened(sample, max_bytes) as (file, size):
            # One byte past its size: a file that grew past the bound since its fstat is
            # refused, not cut. Never read(max_bytes): that allocates max_bytes at once.
            data = file.read(size + 1)
            if len(data) > size:
                data += file.read(max_bytes + 1 - len(data))
    except OSError as exc:
        raise FileRefused(sample.id, _unreadable(exc)) from None
    if len(data) > max_bytes:
        raise FileRefused(sample.id, too_large(len(data), max_bytes, at_least=True))
    return data


def file_digest(sample: Sample, max_bytes: int) -> bytes:
    """sha256 of the sample's bytes, read by CHUNK_BYTES (the digest of the whole file).

    A refused file is not read: its digest is the refusal's, whose text holds its size, so
    a file that changes size changes the shard key, while the workers refuse it the same
    way."""
    digest = hashlib.sha256()
    try:
        with opened(sample, max_bytes) as (file, _):
            read = 0
            while chunk := file.read(CHUNK_BYTES):
                read += len(chunk)
                if read > max_bytes:
                    raise FileRefused(sample.id, too_large(read, max_bytes, at_least=True))
                digest.update(chunk)
    except FileRefused as exc:
        return hashlib.sha256(b"refused\0" + exc.reason.encode()).digest()
    except OSError as exc:
        return hashlib.sha256(b"refused\0" + _unreadable(exc).encode()).digest()
    return digest.digest()


def total_bytes(samples: Sequence[Sample], max_file_bytes: int) -> int:
    """What reading ``samples`` reads: the sizes of the files that will be read (a file
    over ``max_file_bytes``, a link out of its folder or an unreadable file is refused,
    not read). From stat alone; a link is resolved only when it is one."""
    total = 0
    for sample in samples:
        try:
            info = os.lstat(sample.path)
            if stat.S_ISLNK(info.st_mode):
                info = os.stat(real_path(sample))
        except (OSError, FileRefused):
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size <= max_file_bytes:
            total += info.st_size
    return total


def total_problem(samples: Sequence[Sample], max_file_bytes: int, max_total: int) -> str | None:
    """Why reading ``samples`` is refused as a whole, or None."""
    total = total_bytes(samples, max_file_bytes)
    if total <= max_total:
        return None
    return (
        f"dataset: its {len(samples)} samples hold {total} bytes; accepted: at most "
        f"{max_total} bytes for one evaluation ({MAX_DATASET_SETTING}); ask for fewer samples"
    )
