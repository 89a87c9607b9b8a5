"""The XSP trace levels, in order: each figure comes from the lowest level that yields it.

A module of its own so that the embedded mode reads the levels without OpenTelemetry,
which only the service stack installs (shared/tracing.py).
"""

from __future__ import annotations

TRACE_LEVELS = ("NONE", "APPLICATION", "MODEL", "FRAMEWORK", "LIBRARY", "SYSTEM", "FULL")
