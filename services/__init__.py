"""The services: API, CLI, scheduler, workers and what they run."""

from shared import import_order

# Before any framework loads: TensorFlow and Triton must load in one order (import_order).
import_order.install()
