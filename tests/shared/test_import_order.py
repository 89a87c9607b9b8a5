"""TensorFlow and torch (with Triton) in one process, whichever comes first.

Importing Triton after TensorFlow crashes the interpreter (SIGSEGV); every TensorFlow run
of `benchstack bench` once did, because the manifest check imported Keras before the
TensorFlow backend's own early import of Triton. shared/import_order loads Triton at the
first import of TensorFlow or Keras instead, from the packages every entry point imports.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import TINY, python_code

pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
pytest.importorskip("triton", reason="torch's Triton is not installed (a torch build without it)")

REPO = Path(__file__).resolve().parents[2]
TF_MODEL = "mobilenet_v2_keras"


def _python(code: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    # In the data folder: `profile` writes its trace.json where it runs.
    data_dir.mkdir(parents=True, exist_ok=True)
    return python_code(code, data_dir, cwd=data_dir, timeout_s=600)


def test_triton_after_tensorflow_is_the_crash_this_guards_against(tmp_path: Path) -> None:
    # Without the finder (no package of ours imported): the hazard is real in this
    # environment. Should a release fix it, this fails and import_order can go.
    bare = _python("import keras\nimport triton\nprint('alive')", tmp_path)
    assert bare.returncode == -signal.SIGSEGV, (bare.returncode, bare.stderr[-2000:])


def test_the_first_import_of_keras_loads_triton_before_it(tmp_path: Path) -> None:
    code = (
        "import sys, shared\n"
        "assert 'triton' not in sys.modules  # nothing is loaded until TensorFlow is asked for\n"
        "import keras\n"
        "assert 'triton' in sys.modules\n"
        "import triton\n"
        "print('alive')\n"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0 and "alive" in result.stdout, result.stderr[-3000:]


def test_a_probe_for_tensorflow_loads_nothing_and_the_module_keeps_its_own_loader(
    tmp_path: Path,
) -> None:
    code = (
        "import importlib.util, sys, shared\n"
        "assert importlib.util.find_spec('keras') and importlib.util.find_spec('tensorflow')\n"
        "assert 'triton' not in sys.modules, 'a probe loaded Triton'\n"
        "import keras\n"
        "assert 'triton' in sys.modules\n"
        "print(type(keras.__loader__).__name__, type(keras.__spec__.loader).__name__)\n"
    )
    result = _python(code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["SourceFileLoader", "SourceFileLoader"], result.stdout


def test_tensorflow_loaded_before_us_is_warned_of(tmp_path: Path) -> None:
    result = _python("import keras\nimport shared\n", tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "RuntimeWarning: keras, tensorflow was imported before benchstack" in result.stderr


def _commands(framework: str) -> list[list[str]]:
    short = ["--duration", "0.5", "--samples", "8"]
    if framework == "tensorflow":
        return [
            ["bench", TF_MODEL, "-s", "single-stream", *short],
            ["profile", TF_MODEL, "--trace-level", "framework", "--iterations", "2"],
        ]
    return [
        ["bench", str(REPO / TINY), "-s", "single-stream", *short],
        ["profile", str(REPO / TINY), "--trace-level", "library", "--iterations", "2"],
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "order", [("tensorflow", "torch"), ("torch", "tensorflow")], ids=lambda o: "-then-".join(o)
)
def test_bench_and_profile_of_both_frameworks_share_one_interpreter(
    order: tuple[str, str], tmp_path: Path
) -> None:
    commands = [c for framework in order for c in _commands(framework)]
    code = (
        "import sys\n"
        "from services.cli.main import app\n"
        f"for args in {commands!r}:\n"
        "    app(args, standalone_mode=False)\n"
        "    print('done:', ' '.join(args[:2]), flush=True)\n"
        "import triton  # what torch.compile and the profiler load\n"
        "print('alive', sorted(m for m in ('tensorflow', 'torch', 'triton') if m in sys.modules))\n"
    )
    result = _python(code, tmp_path / "data")
    assert result.returncode == 0, (result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    assert result.stdout.count("done:") == 4, result.stdout[-3000:]
    assert "alive ['tensorflow', 'torch', 'triton']" in result.stdout, result.stdout[-2000:]
