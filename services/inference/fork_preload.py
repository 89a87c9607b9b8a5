"""Imported by the measurement fork server (isolated.PRELOAD): what every run records and
that does not change while the server lives is read here once, and each child forked for a
run inherits it (reading the CPU and the installed packages cost a child 0.2 to 1.4 s)."""

from __future__ import annotations

from shared.environment import warm_caches

warm_caches()
