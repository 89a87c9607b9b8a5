"""Dataset files are bounded in bytes before they are read: the scheduler's hashing goes
by chunks and refuses an oversized file unread; the workers refuse it by name."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.preprocess_throughput import photo_like_jpeg
from services.core.catalogue import resolve_model
from services.preprocess.datasets import DatasetError, resolve_dataset
from services.preprocess.pipeline import preprocess
from services.preprocess.shard_keys import files_digest
from shared.settings import get_settings

GIB = 2**30
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def fresh_settings(data_dir: Path) -> Iterator[None]:
    yield
    get_settings.cache_clear()


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk (a hole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        file.truncate(size)
    return path


# Run in a child whose address space may grow by 1 GiB past what its imports took: reading
# the 3 GiB file whole (what files_digest did) fails there with MemoryError instead of
# taking 3 GB of this host.
CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from services.preprocess.batch import read_sample
    from services.preprocess.datasets import resolve_dataset
    from services.preprocess.decode import DecodeError
    from services.preprocess.shard_keys import files_digest
    def status_kb(field):
        lines = Path("/proc/self/status").read_text().splitlines()
        return int(next(l for l in lines if l.startswith(field)).split()[1])
    cap = status_kb("VmSize:") * 1024 + 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    dataset = resolve_dataset(sys.argv[1], count=None, seed=0, cache_dir=Path(sys.argv[2]))
    digest = files_digest(dataset.samples)
    refused = {}
    for sample in dataset.samples:
        try:
            read_sample(sample)
        except DecodeError as exc:
            refused[exc.name] = exc.reason
    # VmHWM, this process's peak resident memory: ru_maxrss would keep the peak of the
    # pytest process it was forked from across the exec.
    peak_mb = status_kb("VmHWM:") / 1024
    print(json.dumps({"digest": digest, "refused": refused, "rss_mb": peak_mb}))
    """
)


def test_a_3_gib_file_is_refused_by_name_unread_in_little_memory(tmp_path: Path) -> None:
    folder = tmp_path / "datasets" / "photos"
    folder.mkdir(parents=True)
    (folder / "a.jpg").write_bytes(photo_like_jpeg(64, 48, seed=1))
    _sparse(folder / "huge.jpg", 3 * GIB)
    env = {**os.environ, "PYTHONPATH": str(REPO), "BENCHSTACK_DATA_DIR": str(tmp_path)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    result = json.loads(child.stdout)
    limit = get_settings().max_sample_bytes
    assert result["refused"] == {
        "huge.jpg": f"file of {3 * GIB} bytes; accepted: at most {limit} bytes "
        "(BENCHSTACK_MAX_SAMPLE_BYTES)"
    }
    assert result["rss_mb"] < 300, result
    # The digest of a file read by chunks is the digest of the whole file, as before: the
    # shards already stored keep their keys.
    whole = hashlib.sha256((folder / "a.jpg").read_bytes()).digest()
    refusal = hashlib.sha256(b"refused\0" + result["refused"]["huge.jpg"].encode()).digest()
    assert result["digest"] == hashlib.sha256(whole + refusal).hexdigest()


def test_a_file_over_the_bound_is_that_samples_error_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSTACK_MAX_SAMPLE_BYTES", "100000")
    get_settings.cache_clear()
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "small.jpg").write_bytes(photo_like_jpeg(64, 48, seed=1))
    (folder / "large.jpg").write_bytes(photo_like_jpeg(1200, 900, seed=2))
    size = (folder / "large.jpg").stat().st_size
    assert size > 100_000
    dataset = resolve_dataset(str(folder), count=None, seed=0, cache_dir=tmp_path)
    prepared = preprocess(dataset.samples, resolve_model("resnet18").inputs[0])
    assert prepared.ids == ["small.jpg"]
    assert [str(e) for e in prepared.errors] == [
        f"large.jpg: file of {size} bytes; accepted: at most 100000 bytes "
        "(BENCHSTACK_MAX_SAMPLE_BYTES)"
    ]


def test_a_file_that_changes_size_over_the_bound_changes_the_digest(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    _sparse(folder / "huge.jpg", 2000)
    dataset = resolve_dataset(str(folder), count=None, seed=0, cache_dir=tmp_path)
    before = files_digest(dataset.samples, max_file_bytes=1000)
    _sparse(folder / "huge.jpg", 3000)
    assert files_digest(dataset.samples, max_file_bytes=1000) != before


def test_a_dataset_over_the_total_bound_is_refused_at_planning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHSTACK_MAX_DATASET_BYTES", "5000")
    monkeypatch.setenv("BENCHSTACK_MAX_SAMPLE_BYTES", "4000")
    get_settings.cache_clear()
    folder = tmp_path / "photos"
    for name in ("a", "b", "c"):
        _sparse(folder / f"{name}.jpg", 2000)
    _sparse(folder / "z-refused-alone.jpg", 9000)  # over the file bound: never read, not counted
    with pytest.raises(DatasetError) as refused:
        resolve_dataset(str(folder), count=None, seed=0, cache_dir=tmp_path)
    assert str(refused.value) == (
        "dataset: its 4 samples hold 6000 bytes; accepted: at most 5000 bytes for one "
        "evaluation (BENCHSTACK_MAX_DATASET_BYTES); ask for fewer samples"
    )
    # Fewer samples fit.
    fewer = resolve_dataset(str(folder), count=2, seed=0, cache_dir=tmp_path)
    assert [s.id for s in fewer.samples] == ["a.jpg", "b.jpg"]
