"""Contracts and judging without I/O or frameworks, which every stage and campaign shares.

Scenario settings (``scenario``), the constraint term language (``constraints``), the
messages' builders and planned shards (``dispatch``), and the judging statistics: stability
windows, bootstrap intervals, accuracy, INVALID hints, the figures they name. Imports point
down to ``shared`` only (pyproject.toml's import-linter contract).
"""
