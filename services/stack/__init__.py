"""The local stack: the API and every worker as processes on this machine (no Docker)."""
