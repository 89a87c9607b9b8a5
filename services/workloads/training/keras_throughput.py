"""Training throughput of a Keras model (TensorFlow backend), measured as the torch path is:
the same warm-up, step loop (step_timing.timed_loop), statistics and report.

A step is timed from fetching the batch to a finished optimizer step: the train step is one
compiled ``tf.function`` (forward, loss, gradients, optimizer update) whose loss is read
back as a Python float, which waits for the step to complete. Its first call traces the
function, which the warm-up steps absorb.

Each run trains in a fresh spawned process, because:
- TensorFlow takes its thread-pool size only before it first initialises, and a fresh
  process lets every run set --threads' worth of intra-op threads;
- TensorFlow 2.21 and torchvision 0.2x loaded in one process crash (torchvision imported
  after TensorFlow segfaults here), and the CLI's process already holds torch;
- peak RSS is then the Keras run's own, not what the CLI loaded before it.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from services.workloads.training.data_sources import (
    ArrayBatchSource,
    folder_arrays,
    synthetic_arrays,
)
from services.workloads.training.step_timing import StepLog, timed_loop
from services.workloads.training.throughput import (
    TrainingResult,
    TrainingSettings,
    channels_of,
    result_of,
)

# Keras mixed-precision policies by --precision: variables stay float32 under both.
POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16"}


def run_keras(
    settings: TrainingSettings, show: Callable[[StepLog], None] | None = None
) -> TrainingResult:
    """Train in a spawned child (see the module docstring); its errors come back as raised
    here: ValueError for bad input (the message names the option), RuntimeError otherwise.
    The child's progress lines come back through the same queue, to ``show``."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_child, args=(settings, results))
    process.start()
    try:
        while True:
            try:
                kind, payload = results.get(timeout=0.5)
                if kind != "log":
                    break
                if show is not None:
                    show(payload)
            except queue.Empty:
                if process.exitcode is not None:  # died without a word (e.g. a crash)
                    raise RuntimeError(
                        f"tensorflow training process exited with code {process.exitcode} "
                        "without a result"
                    ) from None
    finally:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()
    if kind == "result":
        result: TrainingResult = payload
        return result
    if kind == "input":
        raise ValueError(payload)
    raise RuntimeError(f"tensorflow training failed: {payload}")


def _child(settings: TrainingSettings, results: Any) -> None:
    # INFO lines (oneDNN notices, CPU feature hints) would drown the report; warnings stay.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    try:
        result = train_here(settings, show=lambda line: results.put(("log", line)))
        results.put(("result", result))
    except ValueError as exc:  # bad input: the message names the option
        results.put(("input", str(exc)))
    except Exception as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))
        raise


def keras_batches(settings: TrainingSettings) -> ArrayBatchSource:
    """NHWC float32 images and int64 labels, synthetic or read from the folder."""
    channels, size = channels_of(settings.model), settings.image_size
    if settings.data == "synthetic":
        return synthetic_arrays(settings.batch_size, (size, size, channels), settings.classes)
    return folder_arrays(
        Path(settings.data), settings.batch_size, channels, size, settings.classes, "NHWC"
    )


def make_keras_optimiser(settings: TrainingSettings) -> Any:
    """The torch path's optimizers and learning rates."""
    import keras

    if settings.optimizer == "sgd":
        return keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
    return keras.optimizers.Adam(learning_rate=1e-3)


def build_under_policy(settings: TrainingSettings) -> Any:
    """The model with its layers computing in --precision's dtype (Keras mixed precision)."""
    import keras

    from services.workloads.training.keras_models import build_keras_model

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(POLICIES[settings.precision])
    try:
        channels = channels_of(settings.model)
        return build_keras_model(settings.model, settings.image_size, channels, settings.classes)
    finally:
        keras.mixed_precision.set_global_policy(previous)


def train_here(
    settings: TrainingSettings, show: Callable[[StepLog], None] | None = None
) -> TrainingResult:
    """Train in this process. TensorFlow must not have initialised yet here for the thread
    count to take; run_keras gives it a fresh process."""
    import keras
    import tensorflow as tf

    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            f"KERAS_BACKEND: is {keras.backend.backend()!r}; --framework tensorflow needs "
            "'tensorflow'"
        )
    tf.config.threading.set_intra_op_parallelism_threads(settings.threads)
    next_batch = keras_batches(settings)  # a bad --data fails before the model is built
    model = build_under_policy(settings)
    optimiser = make_keras_optimiser(settings)
    optimiser.build(model.trainable_variables)  # its variables exist before tracing
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(images: Any, labels: Any) -> Any:
        with tf.GradientTape() as tape:
            # Logits in float32 for the loss, as Keras advises under mixed precision.
            logits = tf.cast(model(images, training=True), tf.float32)
            loss = loss_fn(labels, logits)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimiser.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    def fetch() -> tuple[Any, Any]:
        images, labels = next_batch()
        return tf.convert_to_tensor(images), tf.convert_to_tensor(labels)

    def train_step(batch: tuple[Any, Any]) -> float:
        loss = float(step(*batch))  # reading the loss waits for the whole step
        if not np.isfinite(loss):
            raise RuntimeError(f"the loss became {loss}: the step did not train")
        return loss

    try:
        timed = timed_loop(
            settings.warmup,
            settings.steps,
            fetch,
            train_step,
            batch_size=settings.batch_size,
            display_every=settings.display_every,
            show=show,
        )
    except tf.errors.OpError as exc:
        # A missing kernel for the reduced-precision dtype reads "No OpKernel was registered"
        # (InvalidArgumentError in a tf.function) or "Could not find device" (NotFoundError).
        missing_kernel = "opkernel" in str(exc).lower() or isinstance(exc, tf.errors.NotFoundError)
        if settings.precision == "fp32" or not missing_kernel:
            raise
        raise ValueError(
            f"--precision: {settings.precision} is not supported by TensorFlow on this CPU "
            f"({type(exc).__name__}); accepted here: fp32"
        ) from exc
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return result_of(settings, timed, peak_rss)
