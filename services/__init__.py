"""The services: API, CLI, scheduler, workers and what they run."""

from shared import frameworks, import_order

# Before any framework loads: TensorFlow and Triton must load in one order (import_order).
import_order.install()


def _backends() -> frameworks.FrameworkCatalogue:
    from services.inference.backends import registry

    return registry


# The frameworks a manifest may name are the backends' folders (shared/frameworks.py).
frameworks.provide(_backends)
