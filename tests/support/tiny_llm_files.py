"""A tiny Llama written to a folder that vLLM (and transformers) can serve; nothing downloaded.

Random weights (seeded) and a byte-level BPE tokenizer trained here on generated words, saved
with ``save_pretrained`` together with a chat template, so both ``/v1/completions`` and
``/v1/chat/completions`` work. Its text is nonsense; tests force output lengths with
``ignore_eos``/``min_tokens`` and check timings and counts, never words.

    write_tiny_llm(folder)   # -> folder, holding config.json, model.safetensors, tokenizer
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

SEED = 58
VOCAB_SIZE = 512
MAX_POSITIONS = 2048
# A chat template in the shape most chat models have: one turn per line, then the
# assistant's turn opened for generation.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIAL_TOKENS = ("<s>", "</s>", "<pad>")
_SYLLABLES = ("ka", "lo", "mi", "nu", "re", "sa", "ti", "vo", "ze", "bra", "sti", "qu")


def _generated_text(lines: int, rng: random.Random) -> list[str]:
    """Lines of made-up words with ASCII punctuation and digits.

    Only ASCII is trained, so every token of the vocabulary decodes to whole characters:
    a streamed token never waits for the rest of a UTF-8 sequence before it shows.
    """
    punctuation = (".", ",", "?", "!", ":", ";", "-", "(", ")", "'", '"')
    out = []
    for _ in range(lines):
        words = [
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(4, 16))
        ]
        words.append(str(rng.randint(0, 9999)))
        out.append(" ".join(words) + rng.choice(punctuation))
    # Every printable ASCII character once, so none is missing from the alphabet.
    out.append("".join(chr(c) for c in range(32, 127)))
    return out


def _train_tokenizer(rng: random.Random) -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tokenizer.train_from_iterator(_generated_text(2000, rng), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = MAX_POSITIONS
    return fast


def write_tiny_llm(folder: Path, *, seed: int = SEED) -> Path:
    """Write the tiny model's files into ``folder`` (made if missing) and return it."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(random.Random(seed))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
