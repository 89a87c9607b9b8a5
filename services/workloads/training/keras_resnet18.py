"""A ResNet-18 built in Keras: keras.applications has no ResNet-18, so `benchstack train
resnet18 --framework tensorflow` trains this one.

The layout follows the ResNet paper's 18-layer network as torchvision builds it: a 7x7/2
stem with 3x3/2 max pooling, four stages of two basic blocks (64, 128, 256, 512 filters;
stride 2 and a 1x1 projection where a stage starts smaller), global average pooling and one
dense layer. Convolutions carry no bias (batch normalisation follows each), so its
trainable parameters match torchvision's resnet18 for the same number of classes.
"""

from __future__ import annotations

from typing import Any

STAGE_FILTERS = (64, 128, 256, 512)
BLOCKS_PER_STAGE = 2
# torchvision's BatchNorm2d defaults, so both frameworks normalise alike.
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.9


def _conv_bn(x: Any, filters: int, kernel: int, stride: int, name: str) -> Any:
    import keras

    x = keras.layers.Conv2D(
        filters, kernel, strides=stride, padding="same", use_bias=False, name=f"{name}_conv"
    )(x)
    return keras.layers.BatchNormalization(
        epsilon=BN_EPSILON, momentum=BN_MOMENTUM, name=f"{name}_bn"
    )(x)


def _basic_block(x: Any, filters: int, stride: int, name: str) -> Any:
    import keras

    shortcut = x
    if stride != 1 or x.shape[-1] != filters:
        shortcut = _conv_bn(x, filters, 1, stride, f"{name}_project")
    y = keras.layers.ReLU(name=f"{name}_relu1")(_conv_bn(x, filters, 3, stride, f"{name}_1"))
    y = _conv_bn(y, filters, 3, 1, f"{name}_2")
    y = keras.layers.Add(name=f"{name}_add")([y, shortcut])
    return keras.layers.ReLU(name=f"{name}_out")(y)


def build_resnet18(input_shape: tuple[int, int, int], classes: int) -> Any:
    """An NHWC ResNet-18 with random weights, returning logits (no softmax)."""
    import keras

    inputs = keras.Input(shape=input_shape, name="images")
    x = keras.layers.ReLU(name="stem_relu")(_conv_bn(inputs, 64, 7, 2, "stem"))
    x = keras.layers.MaxPooling2D(3, strides=2, padding="same", name="stem_pool")(x)
    for stage, filters in enumerate(STAGE_FILTERS, start=1):
        for block in range(BLOCKS_PER_STAGE):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _basic_block(x, filters, stride, f"stage{stage}_block{block + 1}")
    x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = keras.layers.Dense(classes, name="logits")(x)
    return keras.Model(inputs, outputs, name="resnet18")
