"""Training benchmarks: throughput of training steps (issue 15)."""
