"""The group kinds submitted through the API, one package each (see registry.py)."""
