"""What a profile says: the layer table, time by operator type, coverage, cold vs warm.

Layer figures come from the FRAMEWORK pass's warm iterations: a layer's time in one
iteration is the sum of its calls (a reused ReLU runs several times), summarised over the
iterations by the median, with the interquartile range as its spread. Tables rank and sum
medians: one preempted iteration on a shared host once put a ReLU at 34 % of densenet121
by its mean (58 ms) while its median was 0.013 ms. Coverage compares the sum of the leaf
layers' time with the model latency of the same iterations (the ``forward`` spans of that
pass).

Modules with children can do work of their own: ``nn.MultiheadAttention`` computes the
attention itself (its ``out_proj`` is a weight it reads, never a module it calls), a
residual block adds its shortcut. Counting leaves only left vit_b_16 at 62 % coverage with
no attention row. So a module's *own* time — its call's time less the time of the calls
of its direct submodules inside it — becomes a row of its own (``own: True``, the
module's name and type) wherever it is above ``OWN_WORK_SHARE`` of the model, and counts
toward coverage (containers such as ``nn.Sequential`` excepted: they compute nothing).
Part of it is the hooks' own cost around the submodules' calls.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from services.inference.profiling.layer_memory import memory_per_layer
from services.inference.profiling.layer_ops import ops_per_layer, scoped_node_ops
from services.inference.profiling.passes import CLOCK_METHOD, Profile
from services.inference.profiling.ranking import ranked
from services.inference.profiling.spans import Span
from services.inference.profiling.summary import (
    SUMMARY_METHOD,
    iqr_over_iterations_ms,
    median_over_iterations_ms,
    trimmed_mean,
)

TOP_N = 10
# A module's own time (outside its submodules) gets a row above this share of the model.
OWN_WORK_SHARE = 0.005
# Containers compute nothing themselves: their "own" time is calling their children (and
# the hooks around those calls).
CONTAINER_TYPES = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def _pass_spans(profile: Profile, label: str, category: str) -> list[Span]:
    return [s for s in profile.spans if s.category == category and s.args.get("pass") == label]


def _per_iteration(spans: list[Span]) -> dict[str, dict[int, int]]:
    """name -> iteration -> summed duration (ns)."""
    table: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for span in spans:
        table[span.name][int(span.args["iteration"])] += span.duration_ns
    return table


def own_work_spans(profile: Profile, label: str = "FRAMEWORK") -> list[Span]:
    """Per call of a module with submodules: a span of its own time (its duration less its
    direct submodules' calls within it), named and typed as the module."""
    modules = _pass_spans(profile, label, "module")
    if not modules:
        return []
    nested = [*modules, *_pass_spans(profile, label, "layer")]
    by_parent: dict[str, list[Span]] = defaultdict(list)
    for span in nested:
        parent, _, _ = span.name.rpartition(".")
        if parent:
            by_parent[parent].append(span)
    own = []
    for module in modules:
        if module.args.get("type") in CONTAINER_TYPES:
            continue
        inside = sum(
            child.duration_ns
            for child in by_parent.get(module.name, [])
            if child.thread == module.thread
            and module.start_ns <= child.start_ns
            and child.end_ns <= module.end_ns
        )
        args = dict(module.args) | {"own": True}
        own.append(
            Span(
                module.name,
                "own",
                module.start_ns,
                max(0, module.duration_ns - inside),
                module.thread,
                args,
            )
        )
    return own


def layer_table(profile: Profile) -> list[dict[str, Any]]:
    """One row per leaf layer of the FRAMEWORK pass, and per module whose own work is
    above ``OWN_WORK_SHARE`` of the model, slowest first."""
    leaves = _pass_spans(profile, "FRAMEWORK", "layer")
    forwards = _pass_spans(profile, "FRAMEWORK", "model")
    if not leaves or not forwards:
        return []
    iterations = sorted({int(f.args["iteration"]) for f in forwards})
    model_median_ms = float(np.median([f.duration_ns for f in forwards])) / 1e6
    layers = leaves + _significant_own_work(profile, iterations, model_median_ms)
    first: dict[str, Span] = {}
    calls: dict[str, int] = defaultdict(int)
    for span in layers:
        first.setdefault(span.name, span)
        calls[span.name] += 1
    cold = _per_iteration(
        _pass_spans(profile, "cold FRAMEWORK", "layer") + own_work_spans(profile, "cold FRAMEWORK")
    )
    rows = []
    for name, by_iteration in _per_iteration(layers).items():
        times_ms = [by_iteration.get(i, 0) / 1e6 for i in iterations]
        median_ms = float(np.median(times_ms))
        low, high = (float(q) for q in np.percentile(times_ms, [25, 75]))
        cold_ns = cold.get(name, {}).get(0)
        rows.append(
            {
                "name": name,
                "type": first[name].args.get("type", ""),
                "input_shapes": first[name].args.get("input_shapes", []),
                "calls": calls[name] // len(iterations),
                "mean_ms": float(np.mean(times_ms)),
                "median_ms": median_ms,
                "iqr_ms": high - low,
                "trimmed_mean_ms": trimmed_mean(times_ms),
                "percent": 100 * median_ms / model_median_ms if model_median_ms else 0.0,
                "memory_bytes": first[name].args.get("memory_bytes", 0),
                "cold_ms": None if cold_ns is None else cold_ns / 1e6,
                "own": bool(first[name].args.get("own", False)),
            }
        )
    order = {name: span.start_ns for name, span in first.items()}
    return ranked(rows, len(iterations), order)


def _significant_own_work(
    profile: Profile, iterations: list[int], model_median_ms: float
) -> list[Span]:
    own = own_work_spans(profile)
    medians = {
        name: median_over_iterations_ms(by, iterations) for name, by in _per_iteration(own).items()
    }
    floor = OWN_WORK_SHARE * model_median_ms
    return [span for span in own if medians[span.name] > floor]


def by_type(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Layers' medians summed per operator type."""
    totals: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = totals.setdefault(
            row["type"], {"type": row["type"], "layers": 0, "median_ms": 0.0, "percent": 0.0}
        )
        entry["layers"] += 1
        entry["median_ms"] += row["median_ms"]
        entry["percent"] += row["percent"]
    return sorted(totals.values(), key=lambda e: e["median_ms"], reverse=True)


def coverage(profile: Profile) -> dict[str, Any] | None:
    """Time of the table's rows (leaf layers and modules' own work) against the model
    latency, per iteration, then the median."""
    forwards = _pass_spans(profile, "FRAMEWORK", "model")
    leaves = _pass_spans(profile, "FRAMEWORK", "layer")
    if not leaves or not forwards:
        return None
    iterations = sorted({int(f.args["iteration"]) for f in forwards})
    model_median_ms = float(np.median([f.duration_ns for f in forwards])) / 1e6
    layers = leaves + _significant_own_work(profile, iterations, model_median_ms)
    layer_ns: dict[int, int] = defaultdict(int)
    for span in layers:
        layer_ns[int(span.args["iteration"])] += span.duration_ns
    ratios = [layer_ns[int(f.args["iteration"])] / f.duration_ns for f in forwards]
    return {
        "level": "FRAMEWORK",
        "ratio": float(np.median(ratios)),
        "layer_ms": float(np.median([layer_ns[int(f.args["iteration"])] for f in forwards])) / 1e6,
        "model_ms": float(np.median([f.duration_ns for f in forwards])) / 1e6,
    }


def library_ops(profile: Profile) -> list[dict[str, Any]]:
    """LIBRARY pass: operators and kernels by name, the median over iterations of their
    time in one iteration (0 where an iteration did not call them) with its IQR, calls per
    iteration, the total over the pass and the median's share of the pass's model time,
    slowest first.

    Each kind keeps its own top rows: a CPU operator's time includes the launches of its
    kernels, so one ranking of both would push every GPU kernel off the table.
    """
    forwards = _pass_spans(profile, "LIBRARY", "model")
    model_ms = float(np.median([f.duration_ns for f in forwards])) / 1e6 if forwards else 0.0
    rows = []
    for category in ("library", "gpu"):
        spans = _pass_spans(profile, "LIBRARY", category)
        iterations = sorted({int(s.args["iteration"]) for s in spans})
        counts: dict[str, int] = defaultdict(int)
        for span in spans:
            counts[span.name] += 1
        kind_rows = []
        for name, by in _per_iteration(spans).items():
            median_ms = median_over_iterations_ms(by, iterations)
            kind_rows.append(
                {
                    "name": name,
                    "kind": category,
                    "calls": counts[name] / len(iterations),
                    "total_ms": sum(by.values()) / 1e6,
                    "median_ms": median_ms,
                    "iqr_ms": iqr_over_iterations_ms(by, iterations),
                    "mean_ms": sum(by.values()) / len(iterations) / 1e6,
                    # Of the same pass's model time: nested operators each count their
                    # children too, so these shares do not add up to 100.
                    "percent": 100 * median_ms / model_ms if model_ms else None,
                }
            )
        ranked = sorted(kind_rows, key=lambda r: (r["median_ms"], r["mean_ms"]), reverse=True)
        rows.extend(ranked[: TOP_N * 2])
    return rows


def busy_ns(spans: list[Span]) -> int:
    """Time covered by the spans' union: kernels on concurrent streams count once."""
    busy, reach = 0, None
    for span in sorted(spans, key=lambda s: s.start_ns):
        if reach is None or span.start_ns >= reach:
            busy += span.duration_ns
            reach = span.end_ns
        elif span.end_ns > reach:
            busy += span.end_ns - reach
            reach = span.end_ns
    return busy


def gpu_time(profile: Profile) -> dict[str, Any] | None:
    """LIBRARY pass on a GPU: device busy time per iteration against the model's time.

    A share well below 1 says the GPU waits on the host (launches, copies, Python); the
    medians are over the pass's iterations. None when no device work was traced.
    """
    device = _pass_spans(profile, "LIBRARY", "gpu")
    forwards = _pass_spans(profile, "LIBRARY", "model")
    if not device or not forwards:
        return None
    by_iteration: dict[int, list[Span]] = defaultdict(list)
    for span in device:
        by_iteration[int(span.args["iteration"])].append(span)
    busy, copies, shares = [], [], []
    for forward in forwards:
        spans = by_iteration.get(int(forward.args["iteration"]), [])
        busy.append(busy_ns(spans))
        copies.append(sum(s.duration_ns for s in spans if s.name.startswith(("Memcpy", "Memset"))))
        shares.append(busy[-1] / forward.duration_ns if forward.duration_ns else 0.0)
    return {
        "busy_ms": float(np.median(busy)) / 1e6,
        "copy_ms": float(np.median(copies)) / 1e6,
        "model_ms": float(np.median([f.duration_ns for f in forwards])) / 1e6,
        "busy_share": float(np.median(shares)),
        "kernels_per_iteration": len(device) / len(forwards),
    }


def system_summary(profile: Profile) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for counter in profile.counters:
        for key, value in counter.values.items():
            entry = summary.setdefault(f"{counter.name}.{key}", [])
            entry.append(value)
    return {
        key: {"mean": float(np.mean(values)), "max": float(np.max(values)), "samples": len(values)}
        for key, values in summary.items()
    }


def _layer_ops(profile: Profile, names: list[str]) -> dict[str, Any]:
    """Operators per layer: torch's LIBRARY pass, else ONNX Runtime's nodes by scope."""
    from_library = ops_per_layer(profile, names)
    if from_library:
        return {"layer_ops": from_library, "layer_ops_source": "LIBRARY pass"}
    scoped = scoped_node_ops(profile)[: len(names)]
    source = "FRAMEWORK pass: ONNX Runtime's nodes grouped by the module in their names"
    return {"layer_ops": scoped, "layer_ops_source": source if scoped else ""}


def summarise(profile: Profile, top_n: int = TOP_N) -> dict[str, Any]:
    """The profile as stored with a run and printed by ``benchstack profile``."""
    rows = layer_table(profile)
    memory = memory_per_layer(profile)
    for row in rows:
        # Allocations per layer where a LIBRARY pass recorded them (layer_memory.py).
        row.update(memory.get(row["name"], {}))
    none = profile.pass_of("NONE")
    cold = profile.cold
    return {
        "level": profile.level,
        "iterations": profile.iterations,
        "summary_method": SUMMARY_METHOD,
        "clock_alignment": CLOCK_METHOD,
        "headline": {"level": "NONE", **(none.figures() if none else {})},
        "passes": [p.figures() for p in profile.passes],
        "cold": None
        if cold is None or cold.skipped
        else {"level": cold.level, "latency_ms": cold.latencies_ns[0] / 1e6},
        "layers": rows,
        "top_layers": [r["name"] for r in rows[:top_n]],
        **_layer_ops(profile, [r["name"] for r in rows[:top_n]]),
        "by_type": by_type(rows),
        "coverage": coverage(profile),
        "library_ops": library_ops(profile),
        "gpu_time": gpu_time(profile),
        "system": system_summary(profile),
        "roofline": _roofline(profile, rows),
        "layer_memory_source": "LIBRARY pass (torch.profiler memory events)" if memory else "",
        "notes": profile.notes,
    }


def _roofline(profile: Profile, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    inputs = profile.roofline_inputs
    if inputs is None or not rows:
        return None
    from services.inference.profiling.roofline import roofline

    return roofline(rows, inputs["work"], inputs["peaks"])
