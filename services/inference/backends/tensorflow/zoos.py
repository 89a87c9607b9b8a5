"""The model zoo the TensorFlow backend builds from (its config.py's ``zoos``): Keras's
applications, listed only when a manifest's architecture is checked."""

from __future__ import annotations


def keras_names() -> list[str]:
    import keras

    return sorted(
        name
        for name in dir(keras.applications)
        if name[:1].isupper() and callable(getattr(keras.applications, name))
    )
