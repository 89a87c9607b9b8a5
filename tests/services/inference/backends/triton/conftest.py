from tests.support.backend_fixtures import digits_manifest, digits_onnx
from tests.support.kserve_server import kserve_server_factory

__all__ = ["digits_manifest", "digits_onnx", "kserve_server_factory"]  # fixtures, for pytest
