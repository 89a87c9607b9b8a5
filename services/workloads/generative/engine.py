"""What an engine is to the generative workload: it takes requests (prompt token ids and
how many tokens to produce) and streams each request's tokens back as they come.

The SUT (sut.py) turns the stream into LoadGen's calls; an engine knows nothing of
LoadGen. An engine reports each token the moment it has it, from whatever thread it
generates on, and ends each request with its output token count or why it failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt, already tokenised by the model's tokenizer, and its output length."""

    prompt_ids: tuple[int, ...]
    max_tokens: int
    # The prompt as text, which decodes to ``prompt_ids`` and encodes back to them (an
    # endpoint takes text); "" where only the ids are known.
    prompt_text: str = ""


@dataclass(frozen=True)
class Generation:
    """How one request ended: the output tokens produced (the engine's count, checked
    against the server's where it reports one), or the reason it failed ("" = succeeded)."""

    output_tokens: int
    failure: str = ""
    # The output token ids where the engine has them (accuracy checks); empty otherwise.
    token_ids: tuple[int, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.failure)


class TokenSink(Protocol):
    """Where an engine reports one request's tokens as they are produced."""

    def token(self, count: int = 1) -> None:
        """``count`` more output tokens exist now (the first call is the first token)."""


class Engine(Protocol):
    """A generator of text: an embedded model or a client of a serving endpoint."""

    # The most requests one ``generate`` call takes (static batching); 1: one at a time.
    max_batch: int

    def generate(
        self, requests: Sequence[GenerationRequest], sinks: Sequence[TokenSink]
    ) -> list[Generation]:
        """Generate every request, streaming request i's tokens to ``sinks[i]``; one
        Generation per request, in order. A failure is returned, not raised."""
        ...

    def close(self) -> None:
        """Free what the engine holds (a model, connections)."""
        ...
