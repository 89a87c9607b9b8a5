"""benchmarks/preprocess_throughput.py: its arguments are bounded, and each set's one-core
comparison reports the fast mode against the decode limit (issue 34). Its timing targets
are judged in the benchmark's own output, never here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.preprocess_throughput import (
    benchstack_spec,
    compare_rates,
    main,
    photo_like_jpeg,
    share_of_decode_limit,
    torchvision_pipeline,
)


def test_help_describes_the_decode_limit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "of the decode limit" in text
    assert "--quick" in text


@pytest.mark.parametrize(("flag", "value"), [("--images", "0"), ("--rounds", "101")])
def test_a_count_out_of_bounds_is_refused_naming_the_flag(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([flag, value])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert f"{flag}: '{value}' is not accepted" in error
    assert "a whole number from 1 to" in error


def test_the_share_of_the_decode_limit_is_the_median_of_the_rounds() -> None:
    # Rounds: decode 1 s each; the pipeline 1.25 s, 1 s, 2 s -> 0.8, 1.0, 0.5.
    assert share_of_decode_limit([1.0, 1.0, 1.0], [1.25, 1.0, 2.0]) == pytest.approx(0.8)


def test_each_set_reports_the_fast_mode_against_the_decode_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for seed in range(2):
        path = tmp_path / f"{seed}.jpg"
        path.write_bytes(photo_like_jpeg(320, 240, seed))
        paths.append(path)
    specs = {name: benchstack_spec(name) for name in ("reference", "fast")}
    compare_rates(paths, specs, torchvision_pipeline(), rounds=1)
    text = capsys.readouterr().out
    assert "(decode limit)" in text
    for row in ("fast", "fast+finish"):
        line = re.search(rf"^  {re.escape(row)} at (\d+)% of the decode limit", text, re.M)
        assert line is not None, text
        assert int(line.group(1)) > 0
    assert re.search(r"entropy decoding alone takes \d+% of the decode limit's time", text)


@pytest.mark.slow
def test_the_quick_mode_runs_every_set(capsys: pytest.CaptureFixture[str]) -> None:
    # --device cpu: the device path's code on torchvision's CPU decoder, beside the CPU's.
    main(["--images", "1", "--rounds", "1", "--quick", "--device", "cpu"])
    text = capsys.readouterr().out
    assert text.count("fast at ") == 3, text
    assert "top-5" not in text
    assert len(re.findall(r"decoded on cpu: +[\d.]+ img/s, the CPU fast path", text)) == 3
    assert len(re.findall(r"cpu crops vs the CPU's: max \d+ levels", text)) == 3
    assert len(re.findall(r"host meanwhile: (quiet|busy): other processes used", text)) == 3


@pytest.mark.parametrize(
    ("device", "says"),
    [("gpu", "--device: 'gpu' is not accepted (a GPU is 'cuda')"), ("cuda:x", "accepted: cpu")],
)
def test_a_device_that_is_not_one_is_refused_naming_the_flag(
    device: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--device", device])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err
