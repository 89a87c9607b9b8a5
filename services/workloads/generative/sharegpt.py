"""Prompts from a conversations file in the ShareGPT shape: a JSON list of
``{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}``.

Each conversation gives one request, as vLLM's and GuideLLM's ShareGPT datasets take them:
its first human turn is the prompt, and the reply that follows sets the output length
(its token count under the model's tokenizer, within the accepted range), so requests
ask for what the recorded answer had. Conversations without a human turn followed by a
reply are skipped and counted; a file that yields none is refused.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from services.workloads.generative.engine import GenerationRequest
from services.workloads.generative.lengths import INPUT_RANGE, OUTPUT_RANGE
from services.workloads.generative.prompts import MAX_FILE_BYTES, MAX_PROMPTS

HUMAN = ("human", "user")
REPLY = ("gpt", "assistant", "chatgpt", "bard", "bing")


def _first_exchange(conversation: Any) -> tuple[str, str] | None:
    """(prompt, reply) of a conversation's first human turn and the reply after it."""
    turns = conversation.get("conversations") if isinstance(conversation, dict) else None
    if not isinstance(turns, list):
        return None
    for turn, following in itertools.pairwise(turns):
        if not isinstance(turn, dict) or not isinstance(following, dict):
            return None
        if turn.get("from") in HUMAN and following.get("from") in REPLY:
            prompt, reply = turn.get("value"), following.get("value")
            if isinstance(prompt, str) and isinstance(reply, str) and prompt and reply:
                return prompt, reply
            return None
    return None


def sharegpt_prompts(tokenizer: Any, path: Path, count: int) -> tuple[list[GenerationRequest], int]:
    """Up to ``count`` requests from the file's conversations, in order, and how many
    conversations were skipped (no exchange, or lengths outside the accepted ranges)."""
    if not path.is_file():
        raise ValueError(f"conversations_file: {path} is not a file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"conversations_file: {size} bytes; accepted: at most {MAX_FILE_BYTES}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"conversations_file {path.name}: not JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(
            f"conversations_file {path.name}: accepted: a JSON list of "
            '{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}'
        )
    requests: list[GenerationRequest] = []
    skipped = 0
    for conversation in data:
        if len(requests) >= min(count, MAX_PROMPTS):
            break
        exchange = _first_exchange(conversation)
        if exchange is None:
            skipped += 1
            continue
        prompt, reply = exchange
        ids = tuple(int(i) for i in tokenizer.encode(prompt, add_special_tokens=False))
        output = len(tokenizer.encode(reply, add_special_tokens=False))
        if not (INPUT_RANGE[0] <= len(ids) <= INPUT_RANGE[1]) or output < OUTPUT_RANGE[0]:
            skipped += 1
            continue
        requests.append(GenerationRequest(ids, min(output, OUTPUT_RANGE[1]), prompt_text=prompt))
    if not requests:
        raise ValueError(
            f"conversations_file {path.name}: no conversation has a human turn and a reply "
            f"of at least {OUTPUT_RANGE[0]} tokens ({skipped} skipped)"
        )
    return requests, skipped
