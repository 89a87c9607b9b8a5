"""A tiny Llama with random weights and a byte-level BPE tokenizer trained here on
generated text: a language model to benchmark the harness with, made in seconds, with
nothing downloaded. ``tiny-llama`` as a model name builds it (seeded, so the same seed
gives the same weights and vocabulary)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import transformers

NAME = "tiny-llama"
VOCAB_SIZE = 512
# 4 layers, hidden 256: large enough to be a real decoder, small enough for a CPU test.
SHAPE: dict[str, Any] = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 1024,
}
# A chat template in the shape most chat models have (one turn a line, then the assistant's
# turn opened), so an OpenAI-compatible server serves /v1/chat/completions for it too.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "den", "ar", "ul", "so")


def generated_text(seed: int, lines: int = 2000) -> list[str]:
    """Lines of made-up words: what the tokenizer learns its merges from."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(300)]
    return [" ".join(rng.choice(words) for _ in range(12)) for _ in range(lines)]


def tiny_tokenizer(seed: int = 0) -> transformers.PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(generated_text(seed), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = SHAPE["max_position_embeddings"]
    return fast


def tiny_model(seed: int = 0) -> Any:
    """A LlamaForCausalLM with random weights (torch's generator seeded)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=VOCAB_SIZE, bos_token_id=0, eos_token_id=1, **SHAPE)
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return LlamaForCausalLM(config).eval()
    finally:
        torch.random.set_rng_state(generator_state)


def save_tiny_llama(directory: Path, seed: int = 0) -> Path:
    """The model and its tokenizer saved with save_pretrained, loadable offline."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    directory.mkdir(parents=True, exist_ok=True)
    tiny_tokenizer(seed).save_pretrained(directory)
    tiny_model(seed).save_pretrained(directory)
    return directory
