"""preprocess(processes=N) forks its pool from a process that may already have run torch
ops on several threads (an embedded run before, a library caller): the children must
not wait on the parent's OpenMP thread pool, which does not exist in them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import torch

    from benchmarks.preprocess_throughput import benchstack_spec, photo_like_jpeg
    from services.preprocess.datasets import Sample
    from services.preprocess import pipeline
    from services.preprocess.pipeline import preprocess

    folder = Path(sys.argv[1])
    samples = []
    for i in range(16):
        path = folder / f"{i}.jpg"
        path.write_bytes(photo_like_jpeg(500, 375, seed=i))
        samples.append(Sample(id=path.name, path=path, label=None))
    spec = benchstack_spec("fast")
    pipeline.MIN_BYTES_PER_PROCESS = 0  # a pool even for these few small files
    torch.set_num_threads(2)
    # The parent's first fast batch starts OpenMP's thread pool (the resize runs on it).
    preprocess(samples, spec, batch_size=4, processes=1, stored=True)
    prepared = preprocess(samples, spec, batch_size=4, processes=2, stored=True)
    print(len(prepared.ids), torch.get_num_threads())
    """
)


def test_a_pool_forked_after_torch_ran_on_threads_finishes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,  # it hung for good before the pool's children kept to one thread
        cwd=Path(__file__).parents[3],
    )
    assert result.returncode == 0, result.stderr
    # All 16 prepared, and the caller's own thread setting is left as it was.
    assert result.stdout.split() == ["16", "2"]
