"""The real vLLM server (tests/support/vllm_server.py) for the generative serving tests."""

from tests.support.vllm_server import vllm_server

__all__ = ["vllm_server"]  # fixtures, for pytest
