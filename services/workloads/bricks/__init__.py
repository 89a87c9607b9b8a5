"""DLBricks: benchmarks generated from a model zoo's unique layer sequences, and model
latency constructed from them (Li et al., ICPE 2020).

parse (model -> layers) -> signature (layer sequence -> stable key) -> generate (unique
sequences -> runnable bricks + manifest) -> run (bricks through LoadGen) -> construct
(a model's latency from its bricks' measurements).
"""
