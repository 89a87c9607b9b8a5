"""A brick's sub-modules as a class name and constructor arguments, and back.

A module is written as its allow-listed class and the arguments of ``cls.__init__``, each
read back from the module's attribute of the same name (``bias`` from whether it has
one). Whether that rebuilds the module is checked, not assumed: the rebuilt one must
print the same, hold parameters and buffers of the same names, shapes and dtypes, and
the same plain attributes. A module that fails is ``Unrebuildable`` (its brick is then
written with torch.export instead).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from services.workloads.bricks.fx_allow import class_name, resolve_class

# Where the device and dtype are the builder's to choose, not the brick's.
_LEFT_OUT = frozenset({"device", "dtype"})
# Arguments whose value is not kept under their own name.
_DERIVED: dict[tuple[type[nn.Module], str], Callable[[Any], Any]] = {
    (nn.MultiheadAttention, "bias"): lambda m: m.in_proj_bias is not None,
    (nn.MultiheadAttention, "add_bias_kv"): lambda m: m.bias_k is not None,
}
MAX_PLAIN_ITEMS = 64  # a constructor argument's tuple or list (kernel sizes, shapes)


class Unrebuildable(ValueError):
    """A brick (or one of its modules) the torchfx format cannot write faithfully."""


def is_plain(value: Any, depth: int = 0) -> bool:
    """None, bool, int, float, str, or short tuples and lists of them."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list)) and depth < 4 and len(value) <= MAX_PLAIN_ITEMS:
        return all(is_plain(v, depth + 1) for v in value)
    return False


def module_spec(module: nn.Module) -> dict[str, Any]:
    """``{"class": ..., "kwargs": {...}}`` for ``module``; Unrebuildable if there is none."""
    cls = type(module)
    name = class_name(cls)
    if name is None:
        raise Unrebuildable(f"module class {cls.__module__}.{cls.__qualname__} is not allowed")
    try:
        parameters = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError) as exc:
        raise Unrebuildable(f"{name}: its constructor has no signature") from exc
    kwargs: dict[str, Any] = {}
    for key, parameter in list(parameters.items())[1:]:
        if key in _LEFT_OUT or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        derived = _DERIVED.get((cls, key))
        if derived is not None:
            value = derived(module)
        elif key == "bias" and _is_tensor_or_none(getattr(module, "bias", 0)):
            value = module.bias is not None
        elif hasattr(module, key):
            value = getattr(module, key)
        elif parameter.default is not parameter.empty:
            continue  # its default; the comparison below says whether that was right
        else:
            raise Unrebuildable(f"{name}: no attribute holds its argument {key!r}")
        if not is_plain(value):
            raise Unrebuildable(f"{name}: argument {key!r} is a {type(value).__name__}")
        kwargs[key] = value
    return {"class": name, "kwargs": kwargs}


def _is_tensor_or_none(value: Any) -> bool:
    return value is None or isinstance(value, torch.Tensor)


def build_module(spec: dict[str, Any], device: str = "cpu") -> nn.Module:
    """The module ``spec`` describes, in eval mode (``device="meta"``: shapes only, no
    memory, no random draws)."""
    cls = resolve_class(spec["class"])
    try:
        if device == "cpu":  # the default: a device context would see every op it runs
            module = cls(**spec["kwargs"])
        else:
            with torch.device(device):
                module = cls(**spec["kwargs"])
    except Exception as exc:  # a constructor's own errors say what was wrong
        raise ValueError(
            f"module {spec['class']}: cannot be built from {spec['kwargs']}: "
            f"{type(exc).__name__}: {str(exc)[:200]}"
        ) from exc
    return module.eval()


def same_structure(original: nn.Module, rebuilt: nn.Module) -> str | None:
    """What differs between the two (printout, parameters, buffers, plain attributes),
    or None when nothing does."""
    if repr(original) != repr(rebuilt):
        return f"prints as {rebuilt!r} instead of {original!r}"
    for kind in ("parameters", "buffers"):
        before, after = (
            [(n, tuple(t.shape), t.dtype) for n, t in getattr(m, f"named_{kind}")()]
            for m in (original, rebuilt)
        )
        if before != after:
            return f"{kind} {after} instead of {before}"
    for (name, one), (_, other) in zip(
        original.named_modules(), rebuilt.named_modules(), strict=False
    ):
        if _plain_attributes(one) != _plain_attributes(other):
            return f"attributes of {name or 'the module'} differ"
    return None


def _plain_attributes(module: nn.Module) -> dict[str, Any]:
    return {
        key: value
        for key, value in vars(module).items()
        if not key.startswith("_") and key != "training" and is_plain(value)
    }
