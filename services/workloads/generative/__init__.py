"""Generative inference: a language model's serving judged by LoadGen with token latencies
(time to first token, time per output token, tokens/s, goodput)."""
