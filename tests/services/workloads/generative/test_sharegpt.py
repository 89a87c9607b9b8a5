from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.workloads.generative.sharegpt import sharegpt_prompts
from services.workloads.generative.tiny_llama import tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> object:
    return tiny_tokenizer()


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_the_first_exchange_sets_prompt_and_output_length(
    tokenizer: object, tmp_path: Path
) -> None:
    reply = "kalo mine ru tashi po vedenar kalo mine"

    def exchange(*turns: tuple[str, str]) -> list[dict[str, str]]:
        return [{"from": who, "value": value} for who, value in turns]

    data = [
        {"id": "a", "conversations": exchange(("human", "kalo mine"), ("gpt", reply))},
        {"id": "b", "conversations": exchange(("gpt", "hello"))},
        {
            "id": "c",
            "conversations": exchange(("system", "be"), ("human", "ru ta"), ("gpt", reply)),
        },
        {"id": "d", "conversations": exchange(("human", "ru"), ("gpt", "ka lo mi"))},
    ]
    requests, skipped = sharegpt_prompts(tokenizer, _write(tmp_path / "c.json", data), 2)
    expected = len(tokenizer.encode(reply, add_special_tokens=False))  # type: ignore[attr-defined]
    assert [r.prompt_text for r in requests] == ["kalo mine", "ru ta"]
    assert [r.max_tokens for r in requests] == [expected, expected]
    assert skipped == 1  # "b": no human turn; "d" is past the count asked for


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"conversations": []}, "accepted: a JSON list of"),
        (
            [{"conversations": [{"from": "human", "value": "x"}]}],
            "no conversation has a human turn",
        ),
    ],
)
def test_a_file_without_exchanges_is_refused(
    tokenizer: object, tmp_path: Path, data: object, words: str
) -> None:
    with pytest.raises(ValueError, match=f"conversations_file c.json: .*{words}"):
        sharegpt_prompts(tokenizer, _write(tmp_path / "c.json", data), 5)
