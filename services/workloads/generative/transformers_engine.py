"""The embedded engine: a causal language model run by transformers in this process (CPU
or CUDA), greedy decoding in a manual loop with the KV cache so each token is reported the
moment it exists. A batch is static: its prompts are left-padded together and decoded
step by step until the longest request has its tokens; every request gets exactly its
max_tokens (the end-of-sequence token does not stop it, as `ignore_eos` asks a server)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from services.workloads.generative.engine import Generation, GenerationRequest, TokenSink
from services.workloads.generative.tiny_llama import NAME as TINY_LLAMA
from services.workloads.generative.tiny_llama import tiny_model, tiny_tokenizer

MAX_BATCH = 256


def load_causal_lm(model: str, device: str, seed: int = 0) -> tuple[Any, Any]:
    """(model, tokenizer): ``tiny-llama`` is built here with random weights; anything else
    is a local directory saved with save_pretrained (nothing is downloaded)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if model == TINY_LLAMA:
        return tiny_model(seed).to(device), tiny_tokenizer(seed)
    directory = Path(model).expanduser()
    if not (directory / "config.json").is_file():
        raise ValueError(
            f"model: {model!r} is neither {TINY_LLAMA!r} nor a directory with a config.json "
            "(a model saved with save_pretrained)"
        )
    loaded = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    # transformers' stubs type .to() as taking a model; it takes a device.
    return loaded.to(device).eval(), tokenizer  # type: ignore[arg-type]


def load_tokenizer(model: str) -> Any:
    """The tokenizer alone (a client of a server makes its prompts with it)."""
    from transformers import AutoTokenizer

    if model == TINY_LLAMA:
        return tiny_tokenizer()
    if not Path(model).expanduser().is_dir():
        raise ValueError(f"model: {model!r} is neither {TINY_LLAMA!r} nor a tokenizer's directory")
    return AutoTokenizer.from_pretrained(Path(model).expanduser(), local_files_only=True)


class TransformersEngine:
    """Engine (engine.py) over a transformers causal LM."""

    def __init__(self, model: Any, tokenizer: Any, *, device: str = "cpu", max_batch: int = 1):
        if not 1 <= max_batch <= MAX_BATCH:
            raise ValueError(
                f"batch_size: {max_batch} is outside the accepted range 1..{MAX_BATCH}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.max_batch = max_batch
        # Padding is masked out; any id works, the tokenizer's own when it has one.
        self.pad_id = int(tokenizer.pad_token_id or tokenizer.eos_token_id or 0)

    @classmethod
    def load(cls, model: str, *, device: str = "cpu", max_batch: int = 1) -> TransformersEngine:
        loaded, tokenizer = load_causal_lm(model, device)
        return cls(loaded, tokenizer, device=device, max_batch=max_batch)

    def generate(
        self, requests: Sequence[GenerationRequest], sinks: Sequence[TokenSink]
    ) -> list[Generation]:
        limit = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)
        too_long = [r for r in requests if limit and len(r.prompt_ids) + r.max_tokens > limit]
        if too_long:
            # Past its positions a model still computes, but nothing it was trained for.
            worst = max(len(r.prompt_ids) + r.max_tokens for r in too_long)
            reason = f"prompt + output: {worst} tokens is past the model's {limit} positions"
            return [Generation(0, reason) for _ in requests]
        try:
            produced = self._decode(requests, sinks)
        except Exception as exc:  # out of memory, a prompt past the model's positions
            reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
            return [Generation(0, reason) for _ in requests]
        return [Generation(len(ids), token_ids=tuple(ids)) for ids in produced]

    def _decode(
        self, requests: Sequence[GenerationRequest], sinks: Sequence[TokenSink]
    ) -> list[list[int]]:
        import torch

        longest_prompt = max(len(r.prompt_ids) for r in requests)
        rows = [
            [self.pad_id] * (longest_prompt - len(r.prompt_ids)) + list(r.prompt_ids)
            for r in requests
        ]
        masks = [
            [0] * (longest_prompt - len(r.prompt_ids)) + [1] * len(r.prompt_ids) for r in requests
        ]
        input_ids = torch.tensor(rows, device=self.device)
        mask = torch.tensor(masks, device=self.device)
        produced: list[list[int]] = [[] for _ in requests]
        cache = None
        steps = max(r.max_tokens for r in requests)
        with torch.inference_mode():
            for step in range(steps):
                positions = (mask.cumsum(-1) - 1).clamp(min=0)
                if step:
                    positions = positions[:, -1:]
                out = self.model(
                    input_ids=input_ids,
                    attention_mask=mask,
                    position_ids=positions,
                    cache=cache,
                    use_cache=True,
                    logits_to_keep=1,
                )
                cache = out.cache
                next_ids = out.logits[:, -1, :].argmax(-1)
                chosen = next_ids.tolist()
                for i, (request, sink) in enumerate(zip(requests, sinks, strict=True)):
                    if step < request.max_tokens:
                        produced[i].append(int(chosen[i]))
                        sink.token()
                input_ids = next_ids[:, None]
                mask = torch.cat([mask, mask.new_ones((len(requests), 1))], dim=-1)
        return produced

    def close(self) -> None:
        self.model = None
