from tests.support.backend_fixtures import digits_manifest, digits_onnx

__all__ = ["digits_manifest", "digits_onnx"]  # fixtures, re-exported for pytest
