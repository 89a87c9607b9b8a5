"""The values a value-dependent brick is timed on: the order of what its model fed it.

Most layers take the same time whatever their input holds: a convolution, a batch norm
or an activation does the same arithmetic on noise as on a photo's features. Max pooling
does not: its inner loop branches on every comparison, so the branch predictor's luck
sets its speed. Measured here (torch 2.14, one core), a 3x3 stride-1 max pool over
192x56x56 took 11.0 ms on Gaussian noise, 7.4 on a smooth field and 4.3 on zeros; over
googlenet's 13 max pools, 28.0 ms on noise against 20.5 on the activations a photo-like
image makes, which put googlenet's bricks 12 % over the whole model (issue 32).

So a brick whose layers include one of ``VALUE_DEPENDENT`` keeps, beside its file, the
values its inputs held when the model was traced on its example (``<signature>.values.npz``,
one float32 array per input), and is timed on them instead of on noise. Only their order
is kept (each value becomes its dense rank over the tensor, scaled into [0, 1)): a max
pool's comparisons, and so its branches and its time, depend on nothing else, and the
magnitudes the model's weights gave them never leave its owner. Zeros from a ReLU tie
with each other, as they did in the model.

The values help where the value-dependent layer reads the brick's input, as at H=1 or
where it leads its sequence; a layer deeper in a longer brick sees what the brick's fresh
random weights make of them. A tensor over ``MAX_RECORDED_BYTES``, or an input that is
not one plain float tensor, is not recorded, and the brick is timed on noise as before.
A brick is written once per signature: models that share it share the values of the one
that wrote it first. onnxruntime's MaxPool (MLAS) took the same 0.165 ms on noise and on
zeros, so ONNX bricks are timed on noise still.
"""

from __future__ import annotations

import io
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from services.workloads.bricks.fx_brick import BrickFormatError

SUFFIX = ".values.npz"
# Layer types (parse.Layer.type: a module's class, a function's name) whose time depends
# on the values they read. Other candidates measured alike on noise, on a ReLU's output,
# on zeros and on a smooth field (within 1.2x at 192x56x56): relu, relu6, hardswish,
# hardsigmoid, silu, gelu, sigmoid, softmax, avg pooling, batch norm, 1x1 convolution, topk.
VALUE_DEPENDENT = frozenset(
    {
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "AdaptiveMaxPool3d",
        "max_pool1d",
        "max_pool2d",
        "max_pool3d",
        "adaptive_max_pool1d",
        "adaptive_max_pool2d",
        "adaptive_max_pool3d",
    }
)
# Per brick, over its inputs: 64x112x112 float32 (a 224 px stem's max pool) is 3.2 MB.
MAX_RECORDED_BYTES = 64 * 1024 * 1024
# How the order is stored (little-endian float32, as np.savez writes it here).
RECORDED_DTYPE = np.dtype("<f4")
# What a values file may add to its arrays: the zip's and the .npy headers.
FILE_OVERHEAD_BYTES = 64 * 1024


def value_dependent(description: dict[str, Any]) -> bool:
    """Whether any layer of the brick described is timed differently on other values."""
    return any(layer.get("type") in VALUE_DEPENDENT for layer in description["layers"])


def values_path(folder: Path, signature: str) -> Path:
    return folder / f"{signature}{SUFFIX}"


def order_of(tensor: torch.Tensor) -> np.ndarray:
    """``tensor``'s values replaced by their dense rank over it, scaled into [0, 1): the
    same comparisons, ties included, and nothing else."""
    _, ranks = torch.unique(tensor.detach().flatten(), sorted=True, return_inverse=True)
    distinct = int(ranks.max().item()) + 1 if ranks.numel() else 1
    scaled = ranks.to(torch.float64) / distinct
    return scaled.to(torch.float32).reshape(tensor.shape).numpy()


def recordable(values: list[Any]) -> bool:
    """Plain float tensors, within ``MAX_RECORDED_BYTES`` together."""
    if not values or not all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values):
        return False
    return sum(v.numel() for v in values) * RECORDED_DTYPE.itemsize <= MAX_RECORDED_BYTES


def write_values(folder: Path, signature: str, values: list[torch.Tensor]) -> None:
    """The inputs' order, as float32 arrays ``input0``... (written whole, then renamed,
    so a values file present is complete)."""
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {f"input{n}": order_of(v) for n, v in enumerate(values)}
    np.savez(buffer, **arrays)
    partial = folder / f"{signature}.values.partial"
    partial.write_bytes(buffer.getvalue())
    partial.replace(values_path(folder, signature))


def read_values(
    folder: Path, signature: str, description: dict[str, Any]
) -> tuple[torch.Tensor, ...] | None:
    """The recorded inputs of the brick, or None where it has none. A file that does not
    hold one float32 array of each recorded input shape, in order and within the size
    bound, is refused by name (a suite may come from anyone: nothing in it is unpickled,
    and each array's header is checked before its data is read, so no header can make
    this allocate more than the bound)."""
    path = values_path(folder, signature)
    if not path.exists():
        return None
    shapes = [list(shape) for shape in description["inputs"]]
    if not all(isinstance(side, int) and side >= 0 for shape in shapes for side in shape):
        raise BrickFormatError(
            f"{path.name}: its brick's inputs are {shapes}; accepted: plain tensor shapes, "
            "the only inputs values are recorded for"
        )
    limit = MAX_RECORDED_BYTES + FILE_OVERHEAD_BYTES
    size = path.stat().st_size
    if size > limit:
        raise BrickFormatError(
            f"{path.name}: {size} bytes; accepted: at most {limit} (the recorded inputs)"
        )
    names = [f"input{n}" for n in range(len(shapes))]
    try:
        with zipfile.ZipFile(path) as archive:
            held = sorted(archive.namelist())
            members = sorted(f"{name}.npy" for name in names)
            if held != members:
                raise BrickFormatError(
                    f"{path.name}: holds {held}; accepted: {members}, one array per input "
                    "of the brick"
                )
            # The arrays' size follows from the shapes they must have: bounded before any is read.
            values = sum(math.prod(shape) for shape in shapes)
            if values * RECORDED_DTYPE.itemsize > MAX_RECORDED_BYTES:
                raise BrickFormatError(
                    f"{path.name}: {' + '.join(names)} holds {values} values; accepted: at most "
                    f"{MAX_RECORDED_BYTES // RECORDED_DTYPE.itemsize}"
                )
            arrays = [
                _read_array(archive, path.name, name, shape)
                for name, shape in zip(names, shapes, strict=True)
            ]
    except BrickFormatError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise BrickFormatError(f"{path.name}: not a readable values file: {exc}") from exc
    return tuple(torch.from_numpy(array) for array in arrays)


def _read_array(archive: zipfile.ZipFile, file: str, name: str, shape: list[int]) -> np.ndarray:
    """One .npy member, its header checked against ``shape`` and float32 before its data
    is read (``read_values`` has bounded the shapes)."""
    expected = RECORDED_DTYPE
    with archive.open(f"{name}.npy") as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            held_shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        else:
            held_shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        if dtype != expected or fortran or list(held_shape) != shape:
            raise BrickFormatError(
                f"{file}: {name} is {dtype} {list(held_shape)}; accepted: float32 "
                f"{shape}, the shape the brick's description records"
            )
        count = math.prod(shape)
        data = member.read(count * expected.itemsize + 1)
    if len(data) != count * expected.itemsize:
        raise BrickFormatError(
            f"{file}: {name} holds {len(data)} bytes of data; accepted: "
            f"{count * expected.itemsize}, float32 {shape}"
        )
    return np.frombuffer(data, dtype=expected).reshape(shape).copy()
