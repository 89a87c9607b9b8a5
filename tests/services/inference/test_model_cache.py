"""Models kept loaded across runs: one load per key, LRU eviction by memory and count,
a failed run drops its model, and a budget of 0 loads every run afresh."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.core.manifest import ModelManifest
from services.inference.backend_interface import Backend, BackendOptions
from services.inference.backends.registry import load_backend
from services.inference.model_cache import ModelCache, model_key
from tests.support.cli import python_code
from tests.support.manifests import tensor_manifest

OPTIONS = BackendOptions()


class CountingBackend(Backend):
    """A backend that counts what the cache does to it."""

    name = "counting"

    def __init__(self, options: BackendOptions | None = None) -> None:
        super().__init__(options)
        self.resumed = 0
        self.closed = False

    def version(self) -> str:
        return "1"

    def load(self, manifest: ModelManifest) -> None:
        pass

    def predict(self, batch: np.ndarray) -> np.ndarray:
        return batch

    def resume(self, options: BackendOptions) -> None:
        super().resume(options)
        self.resumed += 1

    def close(self) -> None:
        self.closed = True

    def footprint_bytes(self) -> int:
        weights = getattr(self, "weights", None)
        return 0 if weights is None else int(weights.nbytes)


class Loads:
    def __init__(self) -> None:
        self.made: list[CountingBackend] = []

    def __call__(self) -> Backend:
        backend = CountingBackend()
        self.made.append(backend)
        return backend


def test_the_second_use_of_a_key_reuses_the_loaded_model() -> None:
    cache, load = ModelCache(2**30), Loads()
    with cache.use("a", load, OPTIONS) as first:
        assert first.cold and first.runs_before == 0
    with cache.use("a", load, OPTIONS) as second:
        assert not second.cold and second.runs_before == 1
        assert second.backend is first.backend
        # A kept model gets its process-wide settings back before its run.
        assert load.made[0].resumed == 1
    assert len(load.made) == 1 and cache.loads == 1 and cache.hits == 1
    assert second.timings() == {"model_cache_hit": 1.0, "model_cold_load_s": first.load_s}
    assert first.timings()["model_cache_hit"] == 0.0


def test_a_budget_of_zero_loads_and_closes_every_run() -> None:
    cache, load = ModelCache(0), Loads()
    for _ in range(2):
        with cache.use("a", load, OPTIONS) as use:
            assert use.cold
    assert len(load.made) == 2 and all(backend.closed for backend in load.made)
    assert len(cache) == 0


def test_the_least_recently_used_model_is_closed_first_past_the_entry_limit() -> None:
    cache, load = ModelCache(2**30, max_entries=2), Loads()
    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" comes
        with cache.use(key, load, OPTIONS):
            pass
    a, b, c = load.made
    assert b.closed and not a.closed and not c.closed
    assert len(cache) == 2


def test_a_model_over_the_memory_budget_is_not_kept() -> None:
    cache = ModelCache(2**20)

    def load_16_megabytes() -> Backend:
        backend = CountingBackend()
        backend.weights = np.ones(16 * 2**20, dtype=np.uint8)  # type: ignore[attr-defined]
        return backend

    with cache.use("big", load_16_megabytes, OPTIONS) as use:
        backend = use.backend
    assert isinstance(backend, CountingBackend) and backend.closed
    assert len(cache) == 0


def test_a_run_that_raises_drops_and_closes_its_model() -> None:
    cache, load = ModelCache(2**30), Loads()
    with pytest.raises(RuntimeError), cache.use("a", load, OPTIONS):
        raise RuntimeError("the session broke mid-run")
    assert load.made[0].closed and len(cache) == 0
    with cache.use("a", load, OPTIONS) as use:
        assert use.cold  # loaded afresh, not the broken one


def test_the_key_changes_with_options_manifest_and_the_file_on_disk(tmp_path: Path) -> None:
    model_file = tmp_path / "model.onnx"
    model_file.write_bytes(b"first")

    def manifest(name: str = "probe") -> ModelManifest:
        return tensor_manifest(
            framework="onnxruntime",
            source={"file": {"path": "model.onnx", "sha256": "0" * 64}},
            shape=(4,),
            name=name,
            base_dir=tmp_path,
        )

    one_thread = BackendOptions(intra_op_threads=1)
    key = model_key("onnxruntime", one_thread, manifest())
    assert key == model_key("onnxruntime", one_thread, manifest())
    assert key != model_key("onnxruntime", BackendOptions(intra_op_threads=2), manifest())
    assert key != model_key("onnxruntime", one_thread, manifest(name="other"))
    model_file.unlink()
    model_file.write_bytes(b"second, longer")  # replaced under the same manifest
    assert key != model_key("onnxruntime", one_thread, manifest())


def test_the_preprocessing_mode_stays_out_of_the_key() -> None:
    """A fast-preprocessed run and a reference one load the same model: one entry."""
    manifest = tensor_manifest(framework="null", source={"architecture": "null:zeros"}, shape=(3,))
    options = BackendOptions()
    fast = manifest.with_fidelity("fast")
    assert fast.inputs[0].fidelity == "fast" and fast.base_dir == manifest.base_dir
    assert model_key("null", options, fast) == model_key("null", options, manifest)


def test_threads_stay_out_of_the_key_where_each_run_applies_its_own() -> None:
    manifest = tensor_manifest(framework="null", source={"architecture": "null:zeros"}, shape=(3,))
    one, two = BackendOptions(intra_op_threads=1), BackendOptions(intra_op_threads=2)
    # torch and null apply a run's threads when it starts (resume): one loaded model.
    assert model_key("null", one, manifest) == model_key("null", two, manifest)
    cache = ModelCache(2**30)
    key = model_key("null", one, manifest)
    with cache.use(key, lambda: load_backend("null", one, manifest), one):
        pass
    with cache.use(key, lambda: load_backend("null", two, manifest), two) as use:
        assert not use.cold and use.backend.options.intra_op_threads == 2


def test_a_real_backend_is_kept_loaded_and_runs_again() -> None:
    manifest = tensor_manifest(framework="null", source={"architecture": "null:zeros"}, shape=(3,))
    options = BackendOptions(extra={"fail_every": 2})
    cache = ModelCache(2**30)
    key = model_key("null", options, manifest)
    outputs = []
    for _ in range(2):
        with cache.use(key, lambda: load_backend("null", options, manifest), options) as use:
            # A kept null model must not count last run's batches toward fail_every.
            use.backend.warm_up(np.zeros((1, 3), dtype=np.float32))
            use.backend.start_measurement()
            outputs.append(use.backend.predict(np.zeros((2, 3), dtype=np.float32)).shape)
    assert outputs == [(2, 10), (2, 10)] and cache.loads == 1


def test_the_process_cache_closes_what_it_keeps_before_the_interpreter_shuts_down(
    tmp_path: Path,
) -> None:
    # A Triton gRPC client left to the garbage collector at shutdown printed a traceback
    # after the report (its __del__ ran once grpc's module globals were gone).
    code = (
        "from tests.services.inference.test_model_cache import CountingBackend, OPTIONS\n"
        "from services.inference.model_cache import process_cache\n"
        "class Announcing(CountingBackend):\n"
        "    def close(self):\n"
        "        print('closed', flush=True)\n"
        "with process_cache(2**30).use('kept', Announcing, OPTIONS):\n"
        "    pass\n"
        "print('leaving', flush=True)\n"
    )
    ran = python_code(code, tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["leaving", "closed"], ran.stdout
