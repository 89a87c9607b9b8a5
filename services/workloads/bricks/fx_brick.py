"""The torchfx brick format: a brick's fx graph as JSON, safe to read from anyone's suite.

``bricks/<signature>.torchfx`` (JSON text)::

    {"format": "benchstack-torchfx", "version": 1,
     "modules": {"m0": {"class": "torch.nn.Conv2d", "kwargs": {"in_channels": 3, ...}}},
     "nodes": [{"name": "input0", "op": "placeholder"},
               {"name": "layer0", "op": "call_module", "target": "m0",
                "args": [{"node": "input0"}]},
               {"name": "glue1", "op": "call_function", "target": "torch.flatten", "args": [...]},
               {"name": "output", "op": "output", "args": [{"node": "layer0"}]}]}

An argument is a JSON scalar, a list, or an object with one tag: ``node`` (an earlier
node), ``tuple``, ``dict`` (pairs), ``slice``, ``ellipsis``, ``float`` (inf, nan),
``dtype``, ``device``, ``memory_format``, ``layout``, ``function``. Functions, methods
and module classes resolve only through fx_allow's lists; nothing is unpickled or
executed from the file (fx generates the forward from the checked graph). Modules get
fresh random weights when read (the CPU generator seeded with 0 first, as extract seeds).

Written and read in a few ms a brick where torch.export took 35-80 and its load 12-30
(rough figures, shared 2-core host): with hundreds of bricks a suite, those were most of
what generating and running cost.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import fx, nn

from services.workloads.bricks.extract import brick_inputs
from services.workloads.bricks.fx_allow import (
    DisallowedName,
    function_name,
    method_allowed,
    resolve_function,
)
from services.workloads.bricks.fx_arguments import (
    BrickFormatError,
    decode_argument,
    encode_argument,
)
from services.workloads.bricks.fx_modules import (
    Unrebuildable,
    build_module,
    module_spec,
    same_structure,
)
from services.workloads.bricks.parse import shape_of

FORMAT, VERSION = "benchstack-torchfx", 1
SUFFIX = ".torchfx"
MAX_FILE_BYTES = 4 * 2**20
MAX_NODES = 10_000
MAX_PARAMETERS = 2**30  # elements over a brick's modules: 4 GiB of float32
OPS = ("placeholder", "call_module", "call_function", "call_method", "output")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _identifier(text: Any) -> bool:
    """A name fx may write into the forward it generates (a node, a module, a keyword
    argument): anything else could be code."""
    return isinstance(text, str) and bool(_NAME.match(text)) and not keyword.iskeyword(text)


# ---- writing ---------------------------------------------------------------------------


def encode_brick(module: fx.GraphModule) -> str:
    """``module``'s graph and sub-modules as torchfx text; Unrebuildable if any node or
    module has no faithful form (the caller exports it instead)."""
    modules: dict[str, Any] = {}
    nodes: list[dict[str, Any]] = []
    for node in module.graph.nodes:
        entry: dict[str, Any] = {"name": node.name, "op": node.op}
        if node.op == "call_module":
            target = str(node.target)
            if not _identifier(target):
                raise Unrebuildable(f"sub-module name {target!r}")
            spec = module_spec(module.get_submodule(target))
            kwargs = {k: encode_argument(v, 0) for k, v in spec["kwargs"].items()}
            modules[target] = {"class": spec["class"], "kwargs": kwargs}
            entry["target"] = target
        elif node.op == "call_function":
            name = function_name(node.target)
            if name is None:
                raise Unrebuildable(f"function {node.target!r} is not allowed")
            entry["target"] = name
        elif node.op == "call_method":
            if not method_allowed(str(node.target)):
                raise Unrebuildable(f"method {node.target!r} is not allowed")
            entry["target"] = str(node.target)
        elif node.op not in ("placeholder", "output"):
            raise Unrebuildable(f"node op {node.op!r}")
        if node.op == "output":
            entry["args"] = [encode_argument(node.args[0], 0)]
        elif node.op != "placeholder":
            entry["args"] = [encode_argument(a, 0) for a in node.args]
            if node.kwargs:
                entry["kwargs"] = {k: encode_argument(v, 0) for k, v in node.kwargs.items()}
        nodes.append(entry)
    document = {"format": FORMAT, "version": VERSION, "modules": modules, "nodes": nodes}
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


def check_rebuilt(
    original: fx.GraphModule, text: str, description: dict[str, Any], expected: Any
) -> None:
    """Unrebuildable unless ``text`` reads back as ``original``: every module rebuilt the
    same, and the graph runs on the description's input shapes giving ``expected``'s
    (shape_of). Run on the meta device (shapes only, no weights drawn) by fx's Interpreter:
    generating the forward's code, which reading does, would add ~1 ms a brick. Run for
    real where an op has no meta kernel."""
    try:
        root, graph = _read(text, "meta", 0)
    except ValueError as exc:
        raise Unrebuildable(str(exc)) from exc
    for name, module in original.named_children():
        difference = same_structure(module, root.get_submodule(name))
        if difference is not None:
            raise Unrebuildable(f"{type(module).__name__} rebuilt {difference}")
    try:
        with torch.no_grad():
            output = fx.Interpreter(root, graph=graph).run(
                *(_meta_input(s) for s in description["inputs"])
            )
    except Exception:  # an op with no meta kernel: run it for real
        try:
            with torch.no_grad():
                output = decode_brick(text)(*brick_inputs(description))
        except Exception as exc:
            raise Unrebuildable(f"does not run: {type(exc).__name__}: {exc}"[:300]) from exc
    if shape_of(output) != expected:
        raise Unrebuildable(f"gives shapes {shape_of(output)} instead of {expected}")


def _meta_input(shape: Any) -> Any:
    """What brick_inputs makes of ``shape``, on the meta device."""
    if shape is None:
        return None
    if any(part is None or isinstance(part, list) for part in shape):
        return tuple(_meta_input(part) for part in shape)
    return torch.empty(tuple(shape), device="meta")


# ---- reading ---------------------------------------------------------------------------


def decode_brick(text: str, device: str = "cpu", seed: int = 0) -> fx.GraphModule:
    """The brick ``text`` describes, eval mode, fresh weights drawn after seeding the CPU
    generator with ``seed``. BrickFormatError names what is wrong or refused."""
    root, graph = _read(text, device, seed)
    try:
        return fx.GraphModule(root, graph, class_name="Brick").eval()
    except Exception as exc:  # fx's checks and its code generation: say so, not crash
        raise BrickFormatError(f"brick file: its graph does not compile: {exc}"[:300]) from exc


def read_brick(path: Path) -> fx.GraphModule:
    """``decode_brick`` of a file, its size checked before it is read."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise BrickFormatError(
            f"brick file {path.name}: {size} bytes; accepted: at most {MAX_FILE_BYTES}"
        )
    return decode_brick(path.read_text())


def _read(text: str, device: str, seed: int) -> tuple[nn.Module, fx.Graph]:
    """The brick's modules (built on ``device``) and its checked graph."""
    if len(text) > MAX_FILE_BYTES:
        raise BrickFormatError(f"brick file: {len(text)} bytes; accepted: at most {MAX_FILE_BYTES}")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, an int too long ...
        raise BrickFormatError(f"brick file: not JSON: {exc}"[:300]) from exc
    if not isinstance(document, dict) or (document.get("format"), document.get("version")) != (
        FORMAT,
        VERSION,
    ):
        raise BrickFormatError(f"brick file: format is not {FORMAT} version {VERSION}")
    try:
        root = _modules(_field(document, "modules", dict), device, seed)
        return root, _graph(_field(document, "nodes", list), root)
    except BrickFormatError:
        raise
    except ValueError as exc:  # DisallowedName, a constructor refusing its arguments
        raise BrickFormatError(str(exc)) from exc


def _field(entry: dict[str, Any], key: str, kind: type, where: str = "brick file") -> Any:
    value = entry.get(key)
    if not isinstance(value, kind):
        raise BrickFormatError(f"{where}: {key!r} is not a {kind.__name__}")
    return value


def _modules(specs: dict[str, Any], device: str, seed: int) -> nn.Module:
    if len(specs) > MAX_NODES:
        raise BrickFormatError(f"brick file: {len(specs)} modules; accepted: at most {MAX_NODES}")
    for name, spec in specs.items():
        if not _identifier(name) or not isinstance(spec, dict) or set(spec) != {"class", "kwargs"}:
            raise BrickFormatError(
                f"brick file: module {name[:64]!r}: accepted: an identifier naming "
                '{"class": ..., "kwargs": {...}}'
            )
        _field(spec, "class", str, f"module {name}")
        spec["kwargs"] = {
            k: decode_argument(v, {}, 0)
            for k, v in _field(spec, "kwargs", dict, f"module {name}").items()
        }
    if device != "meta":  # bound the weights before drawing them
        built = {name: build_module(spec, "meta") for name, spec in specs.items()}
        count = sum(p.numel() for m in built.values() for p in m.parameters())
        if count > MAX_PARAMETERS:
            raise BrickFormatError(
                f"brick file: {count} weights; accepted: at most {MAX_PARAMETERS}"
            )
        torch.default_generator.manual_seed(seed)  # as extract seeds: the CPU's alone
    root = nn.Module()
    for name, spec in specs.items():
        root.add_module(name, build_module(spec, device))
    return root


def _graph(entries: list[Any], root: nn.Module) -> fx.Graph:
    if not 2 <= len(entries) <= MAX_NODES:
        raise BrickFormatError(f"brick file: {len(entries)} nodes; accepted: 2..{MAX_NODES}")
    graph = fx.Graph()
    defined: dict[str, fx.Node] = {}
    for number, entry in enumerate(entries):
        where = f"node {number}"
        if not isinstance(entry, dict) or not set(entry) <= {
            "name",
            "op",
            "target",
            "args",
            "kwargs",
        }:
            raise BrickFormatError(f"{where}: accepted keys: name, op, target, args, kwargs")
        name, op = _field(entry, "name", str, where), _field(entry, "op", str, where)
        if not _identifier(name) or name in defined:
            raise BrickFormatError(f"{where}: name {name[:64]!r} is not a new identifier")
        if op not in OPS:
            raise BrickFormatError(f"{where}: op {op[:64]!r}; accepted: {', '.join(OPS)}")
        if (op == "output") != (number == len(entries) - 1):
            raise BrickFormatError(f"{where}: the last node, and only it, is the output")
        args = [decode_argument(a, defined, 0) for a in _field_or(entry, "args", list, where)]
        kwargs = _field_or(entry, "kwargs", dict, where)
        if not all(_identifier(k) for k in kwargs):
            raise BrickFormatError(f"{where}: a keyword argument is not an identifier")
        kwargs = {k: decode_argument(v, defined, 0) for k, v in kwargs.items()}
        if op == "placeholder":  # fx writes its name as is: one of ours, not the file's
            inputs = sum(1 for n in defined.values() if n.op == "placeholder")
            defined[name] = graph.placeholder(f"input{inputs}")
        elif op == "output":
            if len(args) != 1 or kwargs:
                raise BrickFormatError(f"{where}: an output takes one argument")
            graph.output(args[0])
        else:
            target = _target(op, _field(entry, "target", str, where), root, where)
            defined[name] = graph.create_node(op, target, tuple(args), kwargs, name=name)
    return graph


def _field_or(entry: dict[str, Any], key: str, kind: type, where: str) -> Any:
    return _field(entry, key, kind, where) if key in entry else kind()


def _target(op: str, text: str, root: nn.Module, where: str) -> str | Callable[..., Any]:
    if op == "call_function":
        return resolve_function(text)
    if op == "call_method":
        if not method_allowed(text):
            raise DisallowedName(
                f"{where}: method {text[:64]!r} is not allowed; accepted: public tensor methods"
            )
        return text
    if text not in dict(root.named_children()):
        raise BrickFormatError(f"{where}: module {text[:64]!r} is not among the modules")
    return text
