// The charts of one run on its evaluation's page: latency histogram and CDF, stability
// windows, and for a traced run its layer breakdown and trace timeline. Each card carries
// the run's verdicts in its title, as every figure on these pages does.

import { gql } from "../api.js";
import { h, replace } from "../dom.js";
import { CDF_AXES, SERIES, cdfTrace, chartBox, plot, timeText, timeTicks } from "../charts.js";
import { inFormWords, number, stability } from "../format.js";
import { busyBadge } from "../figures.js";
import { FLAME_PATHS, LATENCY_POINTS, RUN_CHARTS, TRACE_SPANS } from "../queries.js";
import { notice, verdictBadge } from "../widgets.js";
import { drawFlame } from "./flame_graph.js";
import { drawOperators } from "./operator_table.js";
import { drawRoofline } from "./roofline_chart.js";

// Layers are many and short: the bar chart shows the slowest, and says how many it left out.
const MAX_LAYER_BARS = 40;

function card(title, id, ...children) {
  return h("section", { class: "card chart-card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

function titled(text, run) {
  return h("span", {}, `${text} `,
    verdictBadge(run.validity, "LoadGen validity"), " ", verdictBadge(stability(run) ?? "STABILITY UNKNOWN", "stability"),
    busyBadge(run) ? [" ", busyBadge(run)] : null);
}

// The cards, empty at first; they fill in once the run's chart data has loaded.
export function runChartCards(evaluation, run, signal) {
  const latency = card(titled("Latency distribution", run), "latency-title", notice("Loading the run's latencies…"));
  const cards = [latency];
  const windows = run.report?.stability?.windows ?? [];
  if (windows.length) cards.push(windowsCard(run, windows));
  const traced = evaluation.traceLevel && evaluation.traceLevel !== "NONE";
  const layers = traced ? card(titled("Layer breakdown", run), "layers-title", notice("Loading the layers…")) : null;
  const roofline = traced ? card(titled("Roofline", run), "roofline-title", notice("Loading the roofline…")) : null;
  const timeline = traced ? card(titled("Trace timeline", run), "timeline-title", notice("Loading the trace…")) : null;
  const flame = traced ? card(titled("Flame graph", run), "flame-title", notice("Loading the trace…")) : null;
  const operators = traced ? card(titled("Operators and kernels", run), "operators-title", notice("Loading the operators…")) : null;
  if (traced) cards.push(layers, roofline, timeline, flame, operators);
  load(evaluation.id, run.id, signal, { latency, layers, roofline, timeline, flame, operators, run });
  return cards;
}

async function load(evaluationId, runId, signal, slots) {
  let data;
  try {
    data = await gql(RUN_CHARTS, { id: evaluationId, points: LATENCY_POINTS, spans: TRACE_SPANS, paths: FLAME_PATHS });
  } catch (err) {
    if (!signal.aborted) for (const slot of [slots.latency, slots.layers, slots.roofline, slots.timeline, slots.flame, slots.operators]) if (slot) fill(slot, notice(err.message, "error"));
    return;
  }
  if (signal.aborted) return;
  const found = data.evaluation?.runs?.find((r) => r.id === runId);
  drawLatency(slots.latency, found?.latencySample);
  if (slots.layers) drawLayers(slots.layers, found?.layers ?? []);
  if (slots.roofline) drawRoofline(found?.roofline, (...children) => fill(slots.roofline, ...children));
  if (slots.timeline) drawTimeline(slots.timeline, found?.traceTimeline);
  if (slots.flame) drawFlame(found?.traceFlame, (...children) => fill(slots.flame, ...children));
  if (slots.operators) drawOperators(found?.operators, (...children) => fill(slots.operators, ...children));
}

// Keeps the card's title, replaces what is below it.
function fill(cardEl, ...children) {
  replace(cardEl, cardEl.querySelector("h2"), ...children);
}

function drawLatency(cardEl, sample) {
  if (!sample || !sample.totalCount) {
    fill(cardEl, notice("This run stored no per-sample latencies.", "info"));
    return;
  }
  const histogram = chartBox("latency-histogram", `Histogram of ${sample.latenciesMs.length} latencies`);
  const cdf = chartBox("latency-cdf", `Cumulative distribution of ${sample.latenciesMs.length} latencies`);
  fill(cardEl,
    h("div", { class: "chart-pair" },
      h("figure", {}, histogram, h("figcaption", {}, "Histogram (share of samples per bin)")),
      h("figure", {}, cdf, h("figcaption", {}, "Cumulative distribution"))),
    h("p", { class: "small muted", "data-sampling": sample.downsampled ? "downsampled" : "all" },
      sample.downsampled ? `Downsampled for drawing: ${sample.method}.` : `Drawn from ${sample.method}.`));
  plot(histogram, [{
    type: "histogram",
    x: sample.latenciesMs,
    histnorm: "percent",
    marker: { color: SERIES[0] },
    hovertemplate: "%{x} ms: %{y:.2f} % of samples<extra></extra>",
  }], { xaxis: { title: { text: "Latency (ms)" } }, yaxis: { title: { text: "Samples (%)" } }, bargap: 0.04 });
  plot(cdf, [cdfTrace(sample, "latency")], CDF_AXES);
}

function windowsCard(run, windows) {
  const s = run.report.stability;
  const box = chartBox("stability-windows", `Throughput and median latency in ${windows.length} windows`);
  // The verdict is judged on the last judged_windows windows: they are drawn solid.
  const judgedFrom = windows.length - (s.judged_windows ?? windows.length);
  const labels = windows.map((w, i) => `${i + 1}`);
  const opacity = windows.map((w, i) => (i >= judgedFrom ? 1 : 0.4));
  const cardEl = card(titled("Stability windows", run), "windows-title",
    box,
    h("p", { class: "small muted" },
      `${s.rule ?? ""} Throughput spread ${spread(s.throughput_spread)}, latency spread ${spread(s.latency_spread)}; `,
      `the last ${s.judged_windows ?? windows.length} of ${windows.length} windows are judged (faded: not judged).`),
    s.reasons?.length ? h("ul", { class: "reasons" }, s.reasons.map((r) => h("li", {}, inFormWords(r)))) : null);
  plot(box, [
    {
      type: "bar", name: "Throughput (samples/s)", x: labels, y: windows.map((w) => w.samples_per_second),
      marker: { color: SERIES[0], opacity }, hovertemplate: "window %{x}: %{y:.1f} samples/s<extra></extra>",
    },
    {
      type: "scatter", mode: "lines+markers", name: "Median latency (ms)", x: labels,
      y: windows.map((w) => w.median_latency_ms), yaxis: "y2",
      line: { color: SERIES[1], dash: "dash" }, hovertemplate: "window %{x}: %{y:.3f} ms<extra></extra>",
    },
  ], {
    showlegend: true,
    xaxis: { title: { text: "Window" }, type: "category" },
    yaxis: { title: { text: "Samples/s" }, rangemode: "tozero" },
    yaxis2: { title: { text: "Median latency (ms)" }, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false },
    margin: { l: 60, r: 60, t: 36, b: 48 },
  });
  return cardEl;
}

function spread(value) {
  return value === null || value === undefined ? "—" : `${number(value * 100, 1)} %`;
}

function drawLayers(cardEl, layers) {
  if (!layers.length) {
    fill(cardEl, notice("No layer table: this trace level or framework records none.", "info"));
    return;
  }
  const shown = [...layers].sort((a, b) => b.medianMs - a.medianMs).slice(0, MAX_LAYER_BARS);
  const box = chartBox("layer-breakdown", `Median time of the ${shown.length} slowest layers`);
  fill(cardEl, box,
    h("p", { class: "small muted" },
      shown.length < layers.length
        ? `The ${shown.length} slowest of ${layers.length} layers, by median time per iteration over the warm iterations of the FRAMEWORK pass (hover for the interquartile range).`
        : `All ${layers.length} layers, by median time per iteration over the warm iterations of the FRAMEWORK pass (hover for the interquartile range).`));
  // Slowest at the top: plotly draws a horizontal bar chart's first category at the bottom.
  const ordered = [...shown].reverse();
  plot(box, [{
    type: "bar", orientation: "h",
    x: ordered.map((l) => l.medianMs),
    // A module's own work: its time outside its submodules (attention, a residual add, and
    // the profiler's hooks around its submodules' calls).
    y: ordered.map((l) => `${l.name} (${l.type}${l.own ? ", own work" : ""})`),
    customdata: ordered.map((l) => [l.percent, l.calls, l.iqrMs ?? NaN]),
    marker: { color: SERIES[0] },
    hovertemplate: "%{y}: median %{x:.4f} ms (IQR %{customdata[2]:.4f} ms), %{customdata[0]:.1f} % of the model, %{customdata[1]} calls<extra></extra>",
  }], {
    height: 60 + 20 * ordered.length,
    xaxis: { title: { text: "Median time per iteration (ms)" } },
    yaxis: { type: "category", automargin: true },
  });
}

function drawTimeline(cardEl, timeline) {
  if (!timeline) {
    fill(cardEl, notice("This run stored no trace.json.", "info"));
    return;
  }
  if (!timeline.spans.length) {
    fill(cardEl, notice(timeline.note, "info"));
    return;
  }
  const spans = timeline.spans;
  // One row per thread and kind of span, so nested spans (pass > forward > layer) stack.
  const rowOf = (s) => `${s.thread} · ${s.category || "span"}`;
  const categories = [...new Set(spans.map((s) => s.category || "span"))];
  const traces = categories.map((category, i) => {
    const own = spans.filter((s) => (s.category || "span") === category);
    return {
      type: "bar", orientation: "h", name: category,
      base: own.map((s) => s.startMs),
      x: own.map((s) => Math.max(s.durationMs, 0)),
      y: own.map(rowOf),
      text: own.map((s) => s.name),
      customdata: own.map((s) => [timeText(s.startMs), timeText(s.durationMs)]),
      textposition: "none",
      marker: { color: SERIES[i % SERIES.length] },
      hovertemplate: "%{text}<br>start %{customdata[0]}, %{customdata[1]} long<extra>%{fullData.name}</extra>",
    };
  });
  const rows = new Set(spans.map(rowOf)).size;
  const whole = [timeline.wholeStartMs, timeline.wholeEndMs];
  const iters = timeline.iterations;
  // Opens on the measured iterations: the whole trace begins with the queue wait.
  const pad = iters ? 0.02 * (iters.endMs - iters.startMs) : 0;
  const opening = iters ? [iters.startMs - pad, iters.endMs + pad] : whole;
  const box = chartBox("trace-timeline", `Timeline of ${spans.length} trace spans`);
  // The x axis's ticks as relayout updates ("xaxis."-prefixed: at the layout's root they
  // would set nothing, and the relayout handler below would answer its own update forever).
  const xTicks = (range) => {
    const { tickvals, ticktext } = timeTicks(range[0], range[1]);
    return { "xaxis.tickmode": "array", "xaxis.tickvals": tickvals, "xaxis.ticktext": ticktext };
  };
  const setRange = (range, view) => {
    box.dataset.view = view;
    window.Plotly?.relayout(box, { "xaxis.range": range, ...xTicks(range) });
  };
  const controls = h("div", { class: "chart-controls" },
    iters ? h("button", { type: "button", class: "secondary", "data-view-button": "iterations", onclick: () => setRange(opening, "iterations") }, "Iterations") : null,
    h("button", { type: "button", class: "secondary", "data-view-button": "whole", onclick: () => setRange(whole, "whole") }, "Whole trace"));
  fill(cardEl, controls, box,
    h("p", { class: "small muted", "data-sampling": timeline.truncated ? "truncated" : "all", "data-window": iters ? "iterations" : "whole" },
      iters
        ? `Opens on ${iters.note} (${timeText(iters.endMs - iters.startMs)} of a ${timeText(whole[1] - whole[0])} trace); "Whole trace" shows the rest, from the submission (the queue wait) on. `
        : "Shows the whole trace: it holds no measured iterations. ",
      `Showing ${timeline.note}; drag across the chart to zoom in, double-click for the whole trace. `,
      "The full trace opens in Perfetto or chrome://tracing: download trace.json under Logs."));
  box.dataset.view = iters ? "iterations" : "whole";
  plot(box, traces, {
    barmode: "overlay",
    showlegend: true,
    height: 110 + 30 * rows,
    xaxis: { title: { text: "Time from the trace's first event" }, range: opening, tickmode: "array", ...timeTicks(...opening) },
    yaxis: { type: "category", automargin: true },
  }).then(() => {
    // Zooming (drag, double-click) keeps the ticks in µs, ms or s.
    box.on?.("plotly_relayout", (change) => {
      if ("xaxis.tickvals" in change) return;
      const range = box._fullLayout?.xaxis?.range;
      if (!range) return;
      box.dataset.view = "zoomed";
      window.Plotly.relayout(box, xTicks(range));
    });
  });
}
