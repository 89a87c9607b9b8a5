"""The models `benchstack train --framework tensorflow` builds, with random weights (nothing
is downloaded), taking NHWC images and returning logits.

Names are the torch side's, where Keras has a counterpart: ``digits`` (the digits CNN,
rebuilt in Keras), ``resnet18`` (keras_resnet18: keras.applications has none) and the
catalogue models keras.applications builds with ``weights=None``.
"""

from __future__ import annotations

from typing import Any

# Catalogue name -> keras.applications factory.
APPLICATIONS: dict[str, str] = {
    "resnet50": "ResNet50",
    "mobilenet_v2": "MobileNetV2",
    "mobilenet_v3_small": "MobileNetV3Small",
    "densenet121": "DenseNet121",
    "efficientnet_b0": "EfficientNetB0",
    "convnext_tiny": "ConvNeXtTiny",
}
BUILT_HERE = ("digits", "resnet18")
KERAS_MODEL_NAMES = (*BUILT_HERE, *APPLICATIONS)


def check_keras_model(name: str) -> str:
    """``name`` when Keras training can build it; otherwise an error listing what can be."""
    if name not in KERAS_MODEL_NAMES:
        raise ValueError(
            f"MODEL: {name!r} has no Keras model here; with --framework tensorflow use one of "
            f"{', '.join(KERAS_MODEL_NAMES)}"
        )
    return name


def digits_cnn(input_shape: tuple[int, int, int], classes: int) -> Any:
    """The torch digits CNN's layers (services/inference/backends/torch/architectures.py)
    in Keras: two 3x3 convolutions with 2x2 max pooling, then two dense layers."""
    import keras

    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(classes),
        ],
        name="digits_cnn",
    )


def build_keras_model(
    name: str, image_size: int, channels: int, classes: int, seed: int = 0
) -> Any:
    """``name`` (one of KERAS_MODEL_NAMES) for square NHWC images, seeded random weights."""
    import keras

    from services.workloads.training.keras_resnet18 import build_resnet18

    check_keras_model(name)
    keras.utils.set_random_seed(seed)
    input_shape = (image_size, image_size, channels)
    if name == "digits":
        return digits_cnn(input_shape, classes)
    if name == "resnet18":
        return build_resnet18(input_shape, classes)
    factory = getattr(keras.applications, APPLICATIONS[name])
    try:
        return factory(
            weights=None, input_shape=input_shape, classes=classes, classifier_activation=None
        )
    except ValueError as exc:  # e.g. "Input size must be at least 32x32"
        raise ValueError(
            f"--image-size: {image_size} does not fit {APPLICATIONS[name]}: {exc}"
        ) from exc
