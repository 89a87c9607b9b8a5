"""The prompts a generative run sends: synthetic ones of exact token lengths made from the
model's own tokenizer, or a JSONL file of prompts (each with an optional output length).

A synthetic prompt is text that the tokenizer encodes to exactly the drawn number of
tokens: random ordinary tokens are decoded to text and encoded back, and the result is
cut or topped up until the round trip holds (a byte-level BPE merges across token
boundaries, so drawn ids alone are not a prompt of that length once sent as text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.lengths import INPUT_RANGE, OUTPUT_RANGE, LengthSpec

MAX_PROMPTS = 100_000
MAX_FILE_BYTES = 64 * 2**20
# A round trip that does not settle in this many rounds is reported, not looped on.
ROUND_TRIPS = 20
# Fewer word tokens than this and prompts are drawn from every ordinary token.
MIN_WORDS = 50


def ordinary_ids(tokenizer: Any) -> np.ndarray:
    """The ids to draw prompts from: tokens that are a word with its leading space and
    encode back to themselves alone, so that a run of them encodes token by token (a
    tokenizer splits words at spaces before merging); where a tokenizer has too few of
    those, every token that is not special (no BOS, EOS or padding inside a prompt)."""
    special = set(tokenizer.all_special_ids)
    ordinary = [i for i in range(len(tokenizer)) if i not in special]
    texts = tokenizer.batch_decode([[i] for i in ordinary])
    spaced = [
        (i, t) for i, t in zip(ordinary, texts, strict=True) if t[:1] == " " and t[1:].strip()
    ]
    encoded = tokenizer([t for _, t in spaced], add_special_tokens=False)["input_ids"]
    words = [i for (i, _), ids in zip(spaced, encoded, strict=True) if list(ids) == [i]]
    return np.array(words if len(words) >= MIN_WORDS else ordinary, dtype=np.int64)


def exact_prompt(
    tokenizer: Any, length: int, rng: np.random.Generator, pool: np.ndarray
) -> tuple[str, tuple[int, ...]]:
    """(text, ids): text that encodes to exactly ``length`` ids (no special tokens)."""
    ids = list(rng.choice(pool, size=length))
    for _ in range(ROUND_TRIPS):
        text = tokenizer.decode(ids)
        encoded = list(tokenizer.encode(text, add_special_tokens=False))
        if len(encoded) == length:
            return text, tuple(int(i) for i in encoded)
        if len(encoded) > length:
            ids = encoded[:length]
        else:
            ids = encoded + list(rng.choice(pool, size=length - len(encoded)))
    raise ValueError(
        f"input_tokens: the tokenizer gives no text of exactly {length} tokens "
        f"after {ROUND_TRIPS} round trips"
    )


def check_count(count: int) -> int:
    if not 1 <= count <= MAX_PROMPTS:
        raise ValueError(f"prompts: {count} is outside the accepted range 1..{MAX_PROMPTS}")
    return count


def synthetic_prompts(
    tokenizer: Any, count: int, inputs: LengthSpec, outputs: LengthSpec, seed: int
) -> list[GenerationRequest]:
    """``count`` prompts whose lengths are drawn (seeded) from ``inputs`` and ``outputs``."""
    rng = np.random.default_rng(seed)
    input_lengths = inputs.draw(check_count(count), rng, INPUT_RANGE)
    output_lengths = outputs.draw(count, rng, OUTPUT_RANGE)
    pool = ordinary_ids(tokenizer)
    requests = []
    for length, max_tokens in zip(input_lengths, output_lengths, strict=True):
        text, ids = exact_prompt(tokenizer, length, rng, pool)
        requests.append(GenerationRequest(ids, max_tokens, prompt_text=text))
    return requests


def file_prompts(
    tokenizer: Any, path: Path, outputs: LengthSpec, seed: int
) -> list[GenerationRequest]:
    """A JSONL file, one object a line: ``{"prompt": "...", "output_tokens": 128}``, the
    output length optional (drawn from ``outputs`` where absent)."""
    if not path.is_file():
        raise ValueError(f"prompts_file: {path} is not a file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"prompts_file: {size} bytes; accepted: at most {MAX_FILE_BYTES}")
    lines = [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    if not lines:
        raise ValueError(f"prompts_file: {path} holds no prompt")
    check_count(len(lines))
    drawn = outputs.draw(len(lines), np.random.default_rng(seed), OUTPUT_RANGE)
    return [
        _file_request(tokenizer, path, n, line, d)
        for (n, line), d in zip(lines, drawn, strict=True)
    ]


def _file_request(
    tokenizer: Any, path: Path, number: int, line: str, drawn: int
) -> GenerationRequest:
    where = f"prompts_file {path.name} line {number}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(row, dict) or not isinstance(row.get("prompt"), str) or not row["prompt"]:
        raise ValueError(f'{where}: accepted: {{"prompt": "non-empty text", "output_tokens": N}}')
    unknown = sorted(set(row) - {"prompt", "output_tokens"})
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}")
    low, high = OUTPUT_RANGE
    output = row.get("output_tokens", drawn)
    if isinstance(output, bool) or not isinstance(output, int) or not low <= output <= high:
        raise ValueError(f"{where}: output_tokens {output!r} is not an integer in {low}..{high}")
    ids = tuple(int(i) for i in tokenizer.encode(row["prompt"], add_special_tokens=False))
    if not INPUT_RANGE[0] <= len(ids) <= INPUT_RANGE[1]:
        raise ValueError(
            f"{where}: {len(ids)} prompt tokens; accepted: {INPUT_RANGE[0]}..{INPUT_RANGE[1]}"
        )
    return GenerationRequest(ids, output, prompt_text=row["prompt"])


def token_counts(prompts: Sequence[GenerationRequest]) -> dict[str, int]:
    return {
        "prompts": len(prompts),
        "input_tokens": sum(len(p.prompt_ids) for p in prompts),
        "output_tokens": sum(p.max_tokens for p in prompts),
    }
