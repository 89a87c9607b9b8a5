"""A generative engine that produces tokens on a fixed pace (sleeps), with no model: the
streaming SUT's and the figures' tests need exact, cheap timing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from services.workloads.generative.engine import Generation, GenerationRequest, TokenSink

# The first prompt token of a request this engine fails.
FAILING = 0


@dataclass
class PacedEngine:
    """Each batch: ``first_s`` until the first tokens, then ``per_token_s`` per token;
    a request whose prompt starts with ``FAILING`` fails with a reason."""

    first_s: float = 0.002
    per_token_s: float = 0.001
    max_batch: int = 1

    def generate(
        self, requests: Sequence[GenerationRequest], sinks: Sequence[TokenSink]
    ) -> list[Generation]:
        time.sleep(self.first_s)
        longest = max(r.max_tokens for r in requests)
        for step in range(longest):
            if step:
                time.sleep(self.per_token_s)
            for request, sink in zip(requests, sinks, strict=True):
                if step < request.max_tokens:
                    sink.token()
        results = []
        for request in requests:
            if request.prompt_ids[:1] == (FAILING,):
                results.append(Generation(0, "scripted failure"))
            else:
                results.append(Generation(request.max_tokens, token_ids=(1,) * request.max_tokens))
        return results

    def close(self) -> None:
        """Holds nothing."""
