"""FRAMEWORK level for torch: one span per module call, from forward hooks.

Hooks on every module give the layer hierarchy (``layer1`` > ``layer1.0`` >
``layer1.0.conv1``) with module names and types, the shapes of each call's inputs and the
bytes of its outputs. Times are benchstack's own clock read in the hooks, so layer spans
nest inside the iteration span without any alignment.

On a GPU, kernels run after the hook that launched them returns, so an unsynchronised hook
times the launch, not the layer. The hooks synchronise the device on each side of every
module call there: the pass runs slower than the NONE pass, but each layer's span holds its
kernels' execution (the per-kernel view is the LIBRARY pass's).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import torch

from services.inference.backend_interface import Backend
from services.inference.profiling.instruments import Instrument, Window, spans_within
from services.inference.profiling.spans import Span, now_ns
from services.inference.profiling.torch_library import gpu_in_use


def unhookable(backend: Backend) -> str:
    """Why module hooks cannot see this torch backend's layers ('' when they can)."""
    model = getattr(backend, "model", None)
    mode = getattr(backend, "mode", "eager")
    if mode != "eager" or not isinstance(model, torch.nn.Module):
        return (
            f"FRAMEWORK: layer hooks need the eager module; mode={mode} runs a "
            "TorchScript or compiled graph (profile with --option mode=eager)"
        )
    if isinstance(model, torch.jit.ScriptModule):
        return "FRAMEWORK: the model file is TorchScript, whose submodules run no hooks"
    return ""


def shapes_of(values: Any) -> list[list[int]]:
    if isinstance(values, torch.Tensor):
        return [list(values.shape)]
    if isinstance(values, (tuple, list)):
        return [shape for value in values for shape in shapes_of(value)]
    return []


def tensors_in(values: Any) -> Iterator[torch.Tensor]:
    """The tensors in a module's inputs or outputs (nested tuples, lists and dicts)."""
    if isinstance(values, torch.Tensor):
        yield values
    elif isinstance(values, (tuple, list)):
        for value in values:
            yield from tensors_in(value)
    elif isinstance(values, dict):
        for value in values.values():
            yield from tensors_in(value)


def bytes_of(values: Any) -> int:
    return sum(int(t.element_size() * t.nelement()) for t in tensors_in(values))


def elements_of(values: Any) -> int:
    return sum(int(t.nelement()) for t in tensors_in(values))


class TorchLayers(Instrument):
    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self.model: torch.nn.Module = backend.model  # type: ignore[attr-defined]
        self._handles: list[Any] = []
        self._open: list[tuple[int, list[list[int]]]] = []
        self._recorded: list[Span] = []
        self._synchronise = torch.cuda.synchronize if gpu_in_use(backend) else None

    def __enter__(self) -> TorchLayers:
        for name, module in self.model.named_modules():
            if not name:
                continue  # the root is the iteration itself
            leaf = next(module.children(), None) is None
            self._handles.append(module.register_forward_pre_hook(self._pre_hook))
            self._handles.append(
                module.register_forward_hook(self._post_hook(name, type(module).__name__, leaf))
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _pre_hook(self, module: torch.nn.Module, inputs: Any) -> None:
        if self._synchronise is not None:
            self._synchronise()  # the work launched before this layer is not its time
        self._open.append((now_ns(), shapes_of(inputs)))

    def _post_hook(self, name: str, kind: str, leaf: bool) -> Any:
        def hook(module: torch.nn.Module, inputs: Any, output: Any) -> None:
            if self._synchronise is not None:
                self._synchronise()  # wait for the kernels this layer launched
            end = now_ns()
            start, shapes = self._open.pop()
            self._recorded.append(
                Span(
                    name,
                    "layer" if leaf else "module",
                    start,
                    end - start,
                    threading.get_native_id(),
                    {"type": kind, "input_shapes": shapes, "memory_bytes": bytes_of(output)},
                )
            )

        return hook

    def spans(self, windows: list[Window]) -> list[Span]:
        return spans_within(self._recorded, windows)

    def notes(self) -> list[str]:
        if self._synchronise is None:
            return []
        return [
            "FRAMEWORK on a GPU: the device is synchronised around every module call so each "
            "layer's time holds its kernels; this pass's model time is above the NONE pass's"
        ]
