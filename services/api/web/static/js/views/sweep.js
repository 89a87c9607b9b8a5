// One sweep (#/sweeps/<groupId>): its points as they finish, and the curve they make:
// throughput against tail latency, one point per value, joined in value order.

import { h } from "../dom.js";
import { SERIES, chartBox, intervalBars } from "../charts.js";
import { DASH, isFinal, number, scenarioName, shortId } from "../format.js";
import { busyBadge } from "../figures.js";
import { SWEEP } from "../queries.js";
import { stateBadge, verdictBadge } from "../widgets.js";
import { renderGroupPage } from "./group_page.js";

const LABEL = { batch_size: "Batch size", target_qps: "Target QPS", samples_per_query: "Samples per query" };

export function renderSweep(main, signal, groupId) {
  return renderGroupPage(main, signal, groupId, {
    title: "Sweep",
    loading: "the sweep",
    missing: "sweep",
    query: SWEEP,
    field: "sweep",
    view,
    chart: "sweep-curve",
    figure: (sweep) => {
      const done = sweep.points.filter((p) => p.samplesPerSecond != null && p.latencyP99Ms != null);
      return done.length ? [curve(sweep, done), curveAxes(sweep)] : null;
    },
    settled: (sweep) => sweep.points.every((p) => isFinal(p.evaluation.state)),
  });
}

function view(sweep) {
  const label = LABEL[sweep.parameter] ?? sweep.parameter;
  const first = sweep.points[0]?.evaluation;
  const finished = sweep.points.filter((p) => isFinal(p.evaluation.state)).length;
  const ran = sweep.points.filter((p) => p.samplesPerSecond != null).length;
  const loads = ran === 0 ? "no point measured" : `model loaded ${sweep.modelLoads} time${sweep.modelLoads === 1 ? "" : "s"}`;
  const kept = ran === 0
    ? (finished === sweep.points.length ? "(each ended before it was measured)" : "yet")
    : sweep.modelLoads === 0
      ? "(every point ran on a model an earlier run had left loaded)"
      : "(the others ran on the model kept loaded)";
  return [
    h("p", { class: "muted" },
      `${first ? `${first.modelName} ${first.modelVersion} on ${first.framework}, ` : ""}` +
      `over ${label.toLowerCase()}: ${finished} of ${sweep.points.length} points done; ${loads} ${kept}.`),
    h("section", { class: "card" },
      h("h2", {}, "Curve"),
      chartBox("sweep-curve", offline(sweep)
        ? `Throughput against ${label.toLowerCase()}, one point per value`
        : `Throughput against p99 latency, one point per ${label.toLowerCase()}`),
      h("p", { class: "hint" },
        "Each point is one run, labelled with its value, with its 95 % intervals as error bars (none where " +
        "the run could not give one: see its page); a hollow point's run is not VALID and STABLE, " +
        "so its figures are not results to quote." +
        (offline(sweep)
          ? " Offline issues every sample at once, so a latency is a sample's place in the queue, not the " +
            "system's: the curve is throughput against the swept value, and the table shows no latencies."
          : ""))),
    h("section", { class: "card" },
      h("h2", {}, "Points"),
      table(sweep, label)),
  ];
}

function table(sweep, label) {
  // Offline latencies are queue positions: no latency columns (the run's page keeps them).
  const timed = !offline(sweep);
  const latencyHeads = timed ? ["p50 ms", "p90 ms", "p99 ms"] : [];
  const head = [label, "State", "Samples/s", ...latencyHeads, "Verdicts", "Model", "Evaluation"];
  return h("table", { class: "data", "data-sweep-points": String(sweep.points.length) },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, sweep.points.map((p) => h("tr", {},
      h("td", { class: "num" }, number(p.value, 0)),
      h("td", {}, stateBadge(p.evaluation.state)),
      h("td", { class: "num" }, number(p.samplesPerSecond)),
      timed ? h("td", { class: "num" }, number(p.latencyP50Ms, 3)) : null,
      timed ? h("td", { class: "num" }, number(p.latencyP90Ms, 3)) : null,
      timed ? h("td", { class: "num" }, number(p.latencyP99Ms, 3)) : null,
      // BUSY too where the host was busy: the one rule's verdicts (Run.shownFigures).
      h("td", {}, p.validity ? [verdictBadge(p.validity, "validity"), " ", verdictBadge(p.stability ?? DASH, "stability"), " ", busyBadge(p.run)] : DASH),
      h("td", {}, p.modelKept == null ? DASH : p.modelKept ? "kept loaded" : "loaded"),
      h("td", {}, h("a", { href: `#/evaluations/${p.evaluation.id}` }, shortId(p.evaluation.id)))))));
}

function quotable(p) {
  return p.validity === "VALID" && p.stability === "STABLE";
}

// Offline latencies are queue positions: its curve is throughput against the swept value.
function offline(sweep) {
  return scenarioName(sweep.points[0]?.evaluation.scenario) === "offline";
}

function curve(sweep, points) {
  const byValue = offline(sweep);
  return [{
    type: "scatter",
    mode: "lines+markers+text",
    name: LABEL[sweep.parameter] ?? sweep.parameter,
    x: points.map((p) => (byValue ? p.value : p.latencyP99Ms)),
    y: points.map((p) => p.samplesPerSecond),
    // Each point's 95 % intervals: samples/s always, p99 where it is the x axis.
    error_y: intervalBars(points.map((p) => p.samplesPerSecond), points.map((p) => p.run?.confidence?.samplesPerSecond)),
    error_x: byValue
      ? { visible: false }
      : intervalBars(points.map((p) => p.latencyP99Ms), points.map((p) => p.run?.confidence?.latencyP99)),
    text: points.map((p) => number(p.value, 0)),
    textposition: "top center",
    line: { color: SERIES[0], width: 2 },
    marker: {
      size: 10,
      color: points.map((p) => (quotable(p) ? SERIES[0] : "rgba(0,0,0,0)")),
      line: { color: SERIES[0], width: 2 },
    },
    hovertemplate: byValue
      ? "%{text}: %{y:.1f} samples/s<extra></extra>"
      : "%{text}: %{y:.1f} samples/s at p99 %{x:.3f} ms<extra></extra>",
  }];
}

function curveAxes(sweep) {
  const label = LABEL[sweep.parameter] ?? sweep.parameter;
  return {
    xaxis: offline(sweep) ? { title: { text: label }, type: "log", dtick: Math.LN2 / Math.LN10 } : { title: { text: "p99 latency (ms)" } },
    yaxis: { title: { text: "Samples/s" }, rangemode: "tozero" },
  };
}
