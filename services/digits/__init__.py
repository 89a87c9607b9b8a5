"""Datasets benchstack can build on the machine, with a model trained on them."""
