"""What each layer calls: the LIBRARY pass's operators and kernels, per layer.

In the LIBRARY pass every module call is a ``library-layer`` span (a ``record_function``
marker) on the thread that runs it, and the framework's operators (``library``: aten ops,
oneDNN calls) nest inside it. An operator belongs to the innermost layer that contains it
in time; only its outermost operators are counted there (``aten::conv2d`` holds
``aten::convolution`` and the rest: counting all would count its time several times).
A GPU kernel runs later on a stream of its own: it belongs to the layer whose CPU-side
launch carries the same correlation id (Kineto's ``correlation``).

ONNX Runtime has no level below its nodes on the CPU, but an exported model's node names
keep the torch module they came from (``/layer4/layer4.1/conv2/Conv``): its FRAMEWORK
pass's nodes, grouped by that scope, are its operators per layer (``scoped_node_ops``).

Figures are medians over the pass's iterations of each operator's time within the layer
in one iteration (0 where an iteration did not call it), with their IQR and the calls per
iteration.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from services.inference.profiling.passes import Profile
from services.inference.profiling.spans import Span
from services.inference.profiling.summary import (
    iqr_over_iterations_ms,
    median_over_iterations_ms,
)

# Operators or kernels listed per layer.
OPS_PER_LAYER = 5


def _innermost(layers: list[Span], span: Span) -> Span | None:
    """The shortest layer span on ``span``'s thread that contains it."""
    best = None
    for layer in layers:
        if (
            layer.thread == span.thread
            and layer.start_ns <= span.start_ns
            and span.end_ns <= layer.end_ns
            and (best is None or layer.duration_ns < best.duration_ns)
        ):
            best = layer
    return best


def _outermost_ops(ops: list[Span]) -> list[Span]:
    """The operators not contained in another operator of the same layer call."""
    kept: list[Span] = []
    reach = -1
    for op in sorted(ops, key=lambda s: (s.start_ns, -s.duration_ns)):
        if op.start_ns >= reach:
            kept.append(op)
            reach = op.end_ns
    return kept


def assign(profile: Profile, label: str = "LIBRARY") -> dict[str, list[Span]]:
    """Layer name -> the operators and kernels it called, over every iteration."""
    spans = [s for s in profile.spans if s.args.get("pass") == label]
    layers = [s for s in spans if s.category == "library-layer"]
    by_call: dict[int, list[Span]] = defaultdict(list)  # id(layer span) -> its ops
    owner: dict[int, Span] = {}
    # (iteration, correlation id) -> the layer that launched it; ids restart with each
    # round's profiler session, iterations do not.
    launches: dict[tuple[Any, Any], Span] = {}
    for op in (s for s in spans if s.category == "library"):
        layer = _innermost(layers, op)
        if layer is None:
            continue
        by_call[id(layer)].append(op)
        owner[id(layer)] = layer
        if "correlation" in op.args:
            launches[(op.args["iteration"], op.args["correlation"])] = layer
    assigned: dict[str, list[Span]] = defaultdict(list)
    for key, ops in by_call.items():
        assigned[owner[key].name].extend(_outermost_ops(ops))
    for kernel in (s for s in spans if s.category == "gpu"):
        layer = launches.get((kernel.args.get("iteration"), kernel.args.get("correlation")))
        if layer is not None:
            assigned[layer.name].append(kernel)
    return assigned


def ops_per_layer(
    profile: Profile, layer_names: list[str], top_n: int = OPS_PER_LAYER
) -> list[dict[str, Any]]:
    """For each of ``layer_names`` (the layer table's order), its ``top_n`` operators and
    kernels by median time per iteration; [] without a LIBRARY pass."""
    assigned = assign(profile)
    if not assigned:
        return []
    iterations = sorted(
        {int(s.args["iteration"]) for s in profile.spans if s.args.get("pass") == "LIBRARY"}
    )
    rows = []
    for name in layer_names:
        calls = assigned.get(name)
        if not calls:
            continue
        per_op: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for span in calls:
            per_op[(span.name, span.category)][int(span.args["iteration"])] += span.duration_ns
            counts[(span.name, span.category)] += 1
        ops: list[dict[str, Any]] = [
            {
                "name": op,
                "kind": kind,
                "calls": counts[(op, kind)] / len(iterations),
                "median_ms": median_over_iterations_ms(by, iterations),
                "iqr_ms": iqr_over_iterations_ms(by, iterations),
            }
            for (op, kind), by in per_op.items()
        ]
        ops.sort(key=lambda o: o["median_ms"], reverse=True)
        rows.append({"layer": name, "ops": ops[:top_n]})
    return rows


def scoped_node_ops(profile: Profile, top_n: int = OPS_PER_LAYER) -> list[dict[str, Any]]:
    """ONNX Runtime's FRAMEWORK nodes grouped by the module scope in their names, the
    scopes with the most time first; [] when the nodes carry no provider (not ONNX
    Runtime) or no scope."""
    nodes = [
        s
        for s in profile.spans
        if s.args.get("pass") == "FRAMEWORK" and s.category == "layer" and "provider" in s.args
    ]
    scoped: dict[str, list[Span]] = defaultdict(list)
    for node in nodes:
        # ONNX Runtime names a node it fused "fused <first node's name>".
        scope, _, _ = node.name.removeprefix("fused ").rpartition("/")
        if scope:
            scoped[scope].append(node)
    if not scoped:
        return []
    iterations = sorted({int(s.args["iteration"]) for s in nodes})

    def median_ms(spans: list[Span]) -> float:
        per: dict[int, int] = defaultdict(int)
        for span in spans:
            per[int(span.args["iteration"])] += span.duration_ns
        return median_over_iterations_ms(per, iterations)

    rows: list[dict[str, Any]] = []
    for scope, spans in scoped.items():
        by_op: dict[str, list[Span]] = defaultdict(list)
        for span in spans:
            by_op[f"{span.args.get('type', '')} ({span.args.get('provider', '')})"].append(span)
        ops: list[dict[str, Any]] = [
            {"name": op, "kind": "library", "median_ms": median_ms(calls)}
            for op, calls in by_op.items()
        ]
        ops.sort(key=lambda o: o["median_ms"], reverse=True)
        rows.append({"layer": scope, "ops": ops[:top_n], "median_ms": median_ms(spans)})
    rows.sort(key=lambda r: r["median_ms"], reverse=True)
    return rows


def flow_events(profile: Profile, pid: int, origin_ns: int) -> list[dict[str, Any]]:
    """Perfetto flow arrows from each kernel's CPU launch to the kernel (same correlation
    id): ``ph`` "s" at the launch, "f" (bound to the enclosing slice) at the kernel."""
    launches = {
        (s.args.get("iteration"), s.args["correlation"]): s
        for s in profile.spans
        if s.category == "library" and "correlation" in s.args
    }
    events = []
    for kernel in (s for s in profile.spans if s.category == "gpu"):
        launch = launches.get((kernel.args.get("iteration"), kernel.args.get("correlation")))
        if launch is None:
            continue
        flow = f"{kernel.args.get('iteration')}-{kernel.args['correlation']}"
        for span, phase in ((launch, "s"), (kernel, "f")):
            event = {
                "name": "launch",
                "cat": "flow",
                "ph": phase,
                "id": flow,
                "ts": (span.start_ns - origin_ns) / 1000,
                "pid": pid,
                "tid": span.thread,
            }
            if phase == "f":
                event["bp"] = "e"
            events.append(event)
    return events
