"""A tiny Llama (4 layers, hidden 256, random weights) and its byte-level BPE tokenizer,
trained here on generated text, saved with save_pretrained into a folder: a local model
directory as a user would have one. Nothing is downloaded."""

from __future__ import annotations

import os
from pathlib import Path

from services.workloads.generative.tiny_llama import save_tiny_llama


def tiny_llm(directory: Path, seed: int = 0) -> Path:
    """The saved model's folder (``directory``), loadable with HF_HUB_OFFLINE=1."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    return save_tiny_llama(directory, seed)
