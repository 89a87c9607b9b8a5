from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from services.workloads.generative.lengths import INPUT_RANGE, OUTPUT_RANGE, parse_length
from services.workloads.generative.prompts import file_prompts, synthetic_prompts
from services.workloads.generative.tiny_llama import tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> object:
    return tiny_tokenizer()


def test_synthetic_prompts_have_exact_token_lengths_and_are_seeded(tokenizer: object) -> None:
    inputs = parse_length("input_tokens", "uniform:5:40", INPUT_RANGE)
    outputs = parse_length("output_tokens", "normal:16:4", OUTPUT_RANGE)
    prompts = synthetic_prompts(tokenizer, 12, inputs, outputs, seed=3)
    for prompt in prompts:
        again = tokenizer.encode(prompt.prompt_text, add_special_tokens=False)  # type: ignore[attr-defined]
        assert tuple(again) == prompt.prompt_ids
        assert 5 <= len(prompt.prompt_ids) <= 40 and prompt.max_tokens >= 2
    assert len({len(p.prompt_ids) for p in prompts}) > 3  # drawn, not one length
    same = synthetic_prompts(tokenizer, 12, inputs, outputs, seed=3)
    assert same == prompts
    assert synthetic_prompts(tokenizer, 12, inputs, outputs, seed=4) != prompts


def test_lengths_are_drawn_as_written() -> None:
    rng = np.random.default_rng(0)
    assert parse_length("x", "7", OUTPUT_RANGE).draw(3, rng, OUTPUT_RANGE) == [7, 7, 7]
    drawn = parse_length("x", "normal:100:10", OUTPUT_RANGE).draw(2000, rng, OUTPUT_RANGE)
    assert 99 < float(np.mean(drawn)) < 101 and 9 < float(np.std(drawn)) < 11


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("many", "is not a length; accepted: N, uniform:LOW:HIGH or normal:MEAN:STD"),
        ("1", "lies outside the accepted range 2..16384"),
        ("uniform:9:3", "has its low end above its high end"),
        ("gamma:3:4", "is not a length"),
    ],
)
def test_bad_lengths_are_refused_by_name(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=f"output_tokens: '{text}' {words}"):
        parse_length("output_tokens", text, OUTPUT_RANGE)


def test_a_prompts_file_with_optional_output_lengths(tokenizer: object, tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    rows = [{"prompt": "kalo mine ru", "output_tokens": 9}, {"prompt": "tashi po"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    fixed = parse_length("output_tokens", "5", OUTPUT_RANGE)
    prompts = file_prompts(tokenizer, path, fixed, seed=0)
    assert [p.max_tokens for p in prompts] == [9, 5]
    assert prompts[1].prompt_text == "tashi po" and prompts[1].prompt_ids


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("{oops", "line 1: not JSON"),
        ('{"text": "a"}', 'line 1: accepted: {"prompt": "non-empty text"'),
        (
            '{"prompt": "a", "output_tokens": 1}',
            "line 1: output_tokens 1 is not an integer in 2..16384",
        ),
        ('{"prompt": "a", "speaker": "x"}', "line 1: unknown field"),
    ],
)
def test_a_bad_prompts_file_line_is_named(
    tokenizer: object, tmp_path: Path, line: str, words: str
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=f"prompts_file p.jsonl {words}"):
        file_prompts(tokenizer, path, parse_length("o", "4", OUTPUT_RANGE), seed=0)
