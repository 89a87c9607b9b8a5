"""The services: API, CLI, scheduler, workers and what they run."""

from services.inference.profiling import declared
from shared import frameworks, import_order

# Before any framework loads: TensorFlow and Triton must load in one order (import_order).
import_order.install()


def _backends() -> frameworks.FrameworkCatalogue:
    from services.inference.backends import registry

    return registry


def _declared_profilers() -> declared.DeclaredProfilers:
    from services.inference.backends import registry

    return registry


# The frameworks a manifest may name are the backends' folders (shared/frameworks.py), and
# so are the profilers the profiling harness runs per backend (profiling/declared.py).
frameworks.provide(_backends)
declared.provide(_declared_profilers)
