"""Rich rendering of a profile summary (``services/inference/profiling/analysis``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.cli.render import host_text


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _bytes(value: int) -> str:
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"


def _shapes(shapes: list[list[int]]) -> str:
    return " ".join("x".join(str(d) for d in shape) for shape in shapes[:3])


def passes_table(profile: dict[str, Any]) -> Table:
    table = Table(
        title=f"Passes, interleaved in rounds ({profile['summary_method']}; IQR: the spread)"
    )
    for column in ("pass", "iterations", "median ms", "IQR ms", "p99 ms", "vs NONE"):
        table.add_column(column, justify="left" if column == "pass" else "right")
    base = (profile.get("headline") or {}).get("median_ms")
    for row in profile["passes"]:
        if row.get("skipped"):
            table.add_row(row["pass"], "-", "skipped", "", "", "")
            continue
        ratio = f"x{row['median_ms'] / base:.3f}" if base else "-"
        table.add_row(
            row["pass"],
            str(row["iterations"]),
            _ms(row["median_ms"]),
            _ms(row.get("iqr_ms")),
            _ms(row["p99_ms"]),
            ratio,
        )
    return table


def layer_table(profile: dict[str, Any], top_n: int) -> Table:
    table = Table(
        title=f"Top {top_n} layers (FRAMEWORK pass, warm; cold = first inference; "
        "=N: tied, medians within noise, in model order)"
    )
    for column in (
        "rank",
        "layer",
        "type",
        "input shapes",
        "calls",
        "median ms",
        "IQR ms",
        "% model",
        "memory",
        "cold ms",
    ):
        table.add_column(column, justify="left" if column in {"layer", "type"} else "right")
    for row in profile["layers"][:top_n]:
        # A module's work outside its submodules (attention, a residual add).
        own = " (own work)" if row.get("own") else ""
        rank = row.get("rank")
        table.add_row(
            "" if rank is None else f"{'=' if row.get('tied') else ''}{rank}",
            escape(row["name"]) + own,
            row["type"],
            _shapes(row["input_shapes"]),
            str(row["calls"]),
            _ms(row["median_ms"]),
            _ms(row.get("iqr_ms")),
            f"{row['percent']:.1f}",
            _bytes(int(row["memory_bytes"])),
            _ms(row["cold_ms"]),
        )
    return table


def type_table(profile: dict[str, Any]) -> Table:
    table = Table(title="Time by operator type")
    for column in ("type", "layers", "median ms", "% model"):
        table.add_column(column, justify="left" if column == "type" else "right")
    for row in profile["by_type"]:
        median = row.get("median_ms", row.get("mean_ms"))  # runs stored before medians
        table.add_row(row["type"], str(row["layers"]), _ms(median), f"{row['percent']:.1f}")
    return table


def short_kernel_name(name: str, width: int = 96) -> str:
    """A CUDA kernel's name without its return type and parameter list (C++ demangled
    names run to hundreds of characters); template arguments stay, cut at ``width``."""
    if name.startswith(("Memcpy", "Memset")):
        return name  # CUPTI's copy names read as they are ("Memcpy HtoD (Pageable -> Device)")
    name = name.removeprefix("void ")
    depth = 0
    for index, char in enumerate(name):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "(" and depth == 0 and index > 0:
            name = name[:index]
            break
    return name if len(name) <= width else name[: width - 1] + "…"


def library_table(profile: dict[str, Any], top_n: int, kind: str) -> Table:
    title = (
        "Library calls (LIBRARY pass), median per iteration"
        if kind == "library"
        else "GPU kernels and copies (LIBRARY pass), device time per iteration"
    )
    table = Table(title=title)
    for column in ("call" if kind == "library" else "kernel", "median ms"):
        table.add_column(column, justify="right" if column == "median ms" else "left")
    rows = [row for row in profile["library_ops"] if row["kind"] == kind]
    for row in rows[:top_n]:
        name = row["name"] if kind == "library" else short_kernel_name(row["name"])
        table.add_row(escape(name), _ms(row.get("median_ms", row["mean_ms"])))
    return table


def layer_ops_table(profile: dict[str, Any], top_n: int) -> Table:
    """The slowest layers' own operators and kernels (LIBRARY pass)."""
    source = profile.get("layer_ops_source") or "LIBRARY pass"
    table = Table(title=f"Operators and kernels per layer ({source}), median per iteration")
    for column in ("layer", "operator / kernel", "kind", "median ms"):
        table.add_column(column, justify="right" if column == "median ms" else "left")
    for entry in profile["layer_ops"][:top_n]:
        for index, op in enumerate(entry["ops"]):
            name = op["name"] if op["kind"] == "library" else short_kernel_name(op["name"])
            table.add_row(
                escape(entry["layer"]) if index == 0 else "",
                escape(name),
                "kernel" if op["kind"] == "gpu" else "op",
                _ms(op["median_ms"]),
            )
    return table


def roofline_table(roofline: dict[str, Any], top_n: int) -> Table:
    """The slowest layers placed on the roofline (profiling/roofline.py)."""
    peaks = roofline["peaks"]
    table = Table(
        title=(
            f"Roofline of the slowest layers: peaks {peaks['gflops']:.1f} GFLOP/s and "
            f"{peaks['gbps']:.1f} GB/s ({peaks['device']}, {peaks['threads']} threads, "
            f"measured), ridge {roofline['ridge_flops_per_byte']:.1f} FLOP/B"
        )
    )
    columns = ("layer", "GFLOP", "MB", "FLOP/B", "GFLOP/s", "GB/s", "bound", "of roof")
    for column in columns:
        table.add_column(column, justify="left" if column in ("layer", "bound") else "right")
    for row in sorted(roofline["layers"], key=lambda r: r["median_ms"], reverse=True)[:top_n]:
        estimated = "~" if row["flops_source"] != "counted" else ""
        table.add_row(
            escape(row["name"]) + (" (own)" if row["own"] else ""),
            f"{estimated}{row['flops'] / 1e9:.3g}",
            f"{row['bytes'] / 1e6:.2f}",
            f"{estimated}{row['intensity']:.1f}",
            f"{row['gflops']:.1f}",
            f"{row['gbps']:.2f}",
            row["bound"],
            "-" if row["of_roof"] is None else f"{row['of_roof']:.0%}",
        )
    return table


def memory_table(profile: dict[str, Any], top_n: int) -> Table:
    """The layers that allocate most (layer_memory.py), median per iteration."""
    table = Table(
        title=f"Memory per layer ({profile['layer_memory_source']}), median per iteration"
    )
    for column in ("layer", "allocated", "allocations", "peak rise"):
        table.add_column(column, justify="left" if column == "layer" else "right")
    rows = [r for r in profile["layers"] if r.get("allocated_bytes") is not None]
    for row in sorted(rows, key=lambda r: r["allocated_bytes"], reverse=True)[:top_n]:
        table.add_row(
            escape(row["name"]) + (" (own)" if row.get("own") else ""),
            _megabytes(row["allocated_bytes"]),
            f"{row['allocations']:.0f}",
            _megabytes(row["peak_rise_bytes"]),
        )
    return table


def _megabytes(count: float) -> str:
    return f"{count / 2**20:.2f} MiB"


def print_profile(
    console: Console, profile: dict[str, Any], *, trace_file: str | None = None, top_n: int = 10
) -> None:
    console.print(passes_table(profile))
    if profile.get("host"):
        console.print(f"host: {host_text(profile['host'])}", soft_wrap=True)
    headline = profile.get("headline") or {}
    if headline.get("median_ms") is not None:
        console.print(
            f"headline latency (NONE pass, uninstrumented): median "
            f"{headline['median_ms']:.3f} ms, p99 {headline['p99_ms']:.3f} ms"
        )
    if profile.get("cold"):
        cold = profile["cold"]
        console.print(f"cold start (first inference, {cold['level']}): {cold['latency_ms']:.3f} ms")
    if profile["layers"]:
        console.print(layer_table(profile, top_n))
        console.print(type_table(profile))
    coverage = profile.get("coverage")
    if coverage:
        console.print(
            f"coverage: layers {coverage['layer_ms']:.3f} ms of model "
            f"{coverage['model_ms']:.3f} ms = {coverage['ratio']:.1%} "
            f"(median over the {coverage['level']} pass's iterations)"
        )
    for kind in ("library", "gpu"):
        if any(row["kind"] == kind for row in profile["library_ops"]):
            console.print(library_table(profile, top_n, kind))
    if profile.get("layer_ops"):
        console.print(layer_ops_table(profile, top_n))
    if profile.get("layer_memory_source"):
        console.print(memory_table(profile, top_n))
    if profile.get("roofline"):
        console.print(roofline_table(profile["roofline"], top_n))
        console.print(
            "roofline: ~ marks FLOPs estimated as one per output element (no product or "
            "convolution counted); times include the profiler's hooks",
            soft_wrap=True,
        )
    gpu = profile.get("gpu_time")
    if gpu:
        console.print(
            f"GPU busy: {gpu['busy_ms']:.3f} ms of model {gpu['model_ms']:.3f} ms = "
            f"{gpu['busy_share']:.1%} (copies {gpu['copy_ms']:.3f} ms, "
            f"{gpu['kernels_per_iteration']:.0f} device ops per iteration; LIBRARY pass medians)"
        )
    for key, value in profile.get("system", {}).items():
        console.print(f"system {key}: mean {value['mean']:.1f}, max {value['max']:.1f}")
    for note in profile.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
    if trace_file:
        console.print(f"trace (Chrome/Perfetto JSON): {escape(trace_file)}")
