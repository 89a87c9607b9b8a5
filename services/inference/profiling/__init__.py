"""Across-stack profiling with leveled measurement (XSP, Li et al., IPDPS 2020).

A trace level says which instruments run. Each instrumented level is measured in a pass
of its own, after the uninstrumented one, so a profiler's overhead never reaches a
headline figure:

- ``levels``: the levels and what each one switches on.
- ``spans``: spans on one clock (perf_counter anchored to wall time once).
- ``instruments``: what a pass does around each predict (model spans, layers, library
  calls, system sampling), per framework (``torch_layers``, ``torch_library``,
  ``onnxruntime_nodes``, ``system``).
- ``passes``: the leveled, iterative measurement (cold first inference, then one pass
  per level, each repeated and summarised by ``summary``).
- ``analysis``: the layer table, time by operator type, coverage.
- ``trace_events``: the Chrome/Perfetto trace-event JSON and its structural check.
- ``otel_export``: the trace's spans as OpenTelemetry spans under the run's trace.
"""
