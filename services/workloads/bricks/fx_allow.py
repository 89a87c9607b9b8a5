"""What a torch brick file (``<signature>.torchfx``) may name: functions, tensor methods
and module classes, each resolved from an allow-list, never imported by a name the file
gives. A suite may come from someone else; a name outside these lists is refused.

Functions: ATen ops in ``torch`` (and ``torch.functional``'s), ``torch.nn.functional``,
tensor methods, ``operator``'s arithmetic, comparisons and ``getitem``, ``math`` and
``torchvision.ops``' functions. Left out on purpose: anything that reads or writes files
(``torch.from_file``, a tensor's storage), calls a callable it is given (``apply_``,
``operator.call``, hooks) or reaches attributes by name (``getattr``, ``attrgetter``).
Module classes: ``torch.nn``'s and ``torchvision.ops``' ``nn.Module`` subclasses.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import operator
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

FUNCTION_NAMESPACES = (
    "operator",
    "math",
    "torch",
    "torch.nn.functional",
    "torch.Tensor",
    "torchvision.ops",
)
MODULE_NAMESPACES = ("torch.nn", "torchvision.ops")
# Pure functions of their arguments; operator.call, attrgetter, methodcaller, setitem ...
# are left out (they call, reach or change what they are given).
_OPERATORS = frozenset(
    {
        *("abs", "add", "and_", "concat", "contains", "eq", "floordiv", "ge", "getitem"),
        *("gt", "index", "inv", "invert", "is_", "is_not", "le", "lshift", "lt", "matmul"),
        *("mod", "mul", "ne", "neg", "not_", "or_", "pos", "pow", "rshift", "sub"),
        *("truediv", "truth", "xor"),
    }
)
_DENIED_TORCH = frozenset({"from_file"})  # maps a file, shared: writes into it
_DENIED_TENSOR_METHODS = frozenset(
    {
        "apply_",
        "map_",
        "map2_",
        "register_hook",
        "register_post_accumulate_grad_hook",
        "numpy",
        "storage",
        "untyped_storage",
        "storage_type",
        "share_memory_",
        "set_",
        "module_load",
        "backward",
    }
)


class DisallowedName(ValueError):
    """A brick file names a function, method or class outside the allow-list."""


def _namespace(name: str) -> Any:
    if name == "torchvision.ops":
        import torchvision.ops  # only when a brick names it: torch-only suites skip it

        return torchvision.ops
    return {
        "operator": operator,
        "math": math,
        "torch": torch,
        "torch.nn.functional": F,
        "torch.Tensor": torch.Tensor,
        "torch.nn": nn,
    }[name]


def import_namespaces() -> None:
    """Import every namespace a brick may name (torchvision.ops where it is installed: 1.5
    to 2.4 s here, torch._dynamo with it), for a process that is warmed before it is
    timed, as a process that measured whole models has imported torchvision already."""
    # A torch-only install: no brick of its can name torchvision.
    with contextlib.suppress(ImportError):
        _namespace("torchvision.ops")


@cache
def _torch_ops() -> frozenset[str]:
    native = {n for n in dir(torch._C._VariableFunctions) if not n.startswith("_")}
    return frozenset((native | set(torch.functional.__all__)) - _DENIED_TORCH)


def _public(attribute: str) -> bool:
    return attribute.isidentifier() and not attribute.startswith("_")


def method_allowed(name: str) -> bool:
    """Whether ``name`` may be a ``call_method`` target: a public method of torch.Tensor."""
    return (
        _public(name)
        and name not in _DENIED_TENSOR_METHODS
        and callable(getattr(torch.Tensor, name, None))
    )


def _function_allowed(namespace: str, attribute: str, function: Any) -> bool:
    if not _public(attribute) or inspect.isclass(function) or inspect.ismodule(function):
        return False
    if not callable(function):
        return False
    if namespace == "operator":
        return attribute in _OPERATORS
    if namespace == "math":
        return inspect.isbuiltin(function)
    if namespace == "torch":
        return attribute in _torch_ops()
    if namespace == "torch.nn.functional":
        return inspect.isbuiltin(function) or (
            inspect.isfunction(function) and function.__module__ == "torch.nn.functional"
        )
    if namespace == "torch.Tensor":
        return method_allowed(attribute)
    import torchvision.ops

    return attribute in torchvision.ops.__all__ and inspect.isfunction(function)


# What a check of one allow-list takes: (namespace, attribute, object) -> allowed.
Allowed = Callable[[str, str, Any], bool]


def _allowed_name(
    thing: Any, attribute: str, namespaces: tuple[str, ...], allowed: Allowed
) -> str | None:
    """``namespace.attribute`` of the first listed namespace that holds ``thing`` under
    that name and allows it, or None."""
    for namespace in namespaces:
        if namespace == "torchvision.ops" and "torchvision.ops" not in sys.modules:
            continue  # a function or class of torchvision's would have imported it
        if getattr(_namespace(namespace), attribute, None) is thing and allowed(
            namespace, attribute, thing
        ):
            return f"{namespace}.{attribute}"
    return None


def _resolved(
    name: str, namespaces: tuple[str, ...], allowed: Allowed, kind: str, accepted: str
) -> Any:
    """What ``name`` stands for in an allowed namespace, or DisallowedName naming the
    ``kind`` of name and what is ``accepted``."""
    namespace, _, attribute = name.rpartition(".")
    thing = (
        getattr(_namespace(namespace), attribute, None)
        if namespace in namespaces and _public(attribute)
        else None
    )
    if thing is None or not allowed(namespace, attribute, thing):
        raise DisallowedName(f"{kind}: {name!r} is not allowed; accepted: {accepted}")
    return thing


def function_name(function: Any) -> str | None:
    """The allow-listed name of ``function`` (``torch.cat``, ``operator.add``), or None."""
    attribute = getattr(function, "__name__", None)
    if not isinstance(attribute, str):
        return None
    return _allowed_name(function, attribute, FUNCTION_NAMESPACES, _function_allowed)


def resolve_function(name: str) -> Callable[..., Any]:
    """The function ``name`` stands for, if the allow-list holds it."""
    function: Callable[..., Any] = _resolved(
        name,
        FUNCTION_NAMESPACES,
        _function_allowed,
        "function",
        f"tensor functions of {', '.join(FUNCTION_NAMESPACES)}",
    )
    return function


def class_name(cls: type) -> str | None:
    """The allow-listed name of a module class (``torch.nn.Conv2d``), or None."""
    return _allowed_name(cls, cls.__name__, MODULE_NAMESPACES, _class_allowed)


def _class_allowed(namespace: str, attribute: str, cls: Any) -> bool:
    if not (_public(attribute) and inspect.isclass(cls) and issubclass(cls, nn.Module)):
        return False
    if namespace == "torchvision.ops":
        import torchvision.ops

        return attribute in torchvision.ops.__all__
    return True


def resolve_class(name: str) -> type[nn.Module]:
    """The module class ``name`` stands for, if the allow-list holds it."""
    cls: type[nn.Module] = _resolved(
        name,
        MODULE_NAMESPACES,
        _class_allowed,
        "class",
        f"nn.Module classes of {', '.join(MODULE_NAMESPACES)}",
    )
    return cls
