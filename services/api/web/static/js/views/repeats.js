// Repeats (#/repeats/<groupId>): one evaluation run N times. Each run with its figures and
// verdicts, each figure's spread over the runs and its 95 % interval over them (or why
// there is none), and a chart of throughput per run.

import { h } from "../dom.js";
import { SERIES, chartBox, intervalBars } from "../charts.js";
import { DASH, isFinal, metric, number, scenarioName, shortId } from "../format.js";
import { busyBadge } from "../figures.js";
import { REPEATS } from "../queries.js";
import { stateBadge, verdictBadge } from "../widgets.js";
import { renderGroupPage } from "./group_page.js";
import { compareUrl, MAX_COMPARED } from "./compare.js";

// Each figure's label, digits, and its interval's field in Confidence.
const FIGURES = {
  samples_per_second: ["Samples/s", 1, "samplesPerSecond"],
  latency_mean: ["Mean latency", 3, "latencyMean"],
  latency_p50: ["p50 latency", 3, "latencyP50"],
  latency_p90: ["p90 latency", 3, "latencyP90"],
  latency_p99: ["p99 latency", 3, "latencyP99"],
};

export function renderRepeats(main, signal, groupId) {
  return renderGroupPage(main, signal, groupId, {
    title: "Repeats",
    loading: "the repeats",
    missing: "repeats",
    query: REPEATS,
    field: "repeats",
    view,
    chart: "repeats",
    figure: (group) => (measured(group).length ? [bars(group), barAxes(group)] : null),
    settled: (group) => group.repeats.every((r) => isFinal(r.evaluation.state)),
  });
}

// Runs with a throughput figure, in index order.
function measured(group) {
  return group.repeats.filter((r) => r.run?.samplesPerSecond != null);
}

// Offline issues every sample at once: its latencies are queue positions, not the
// system's, so an Offline group shows no latency figures (each run's page keeps them).
function offline(group) {
  return scenarioName(group.repeats[0]?.evaluation.scenario) === "offline";
}

function quotable(run) {
  return run.validity === "VALID" && run.stability === "STABLE";
}

function view(group) {
  const first = group.repeats[0]?.evaluation;
  const finished = group.repeats.filter((r) => isFinal(r.evaluation.state)).length;
  const ids = group.repeats.map((r) => r.evaluation.id);
  return [
    h("p", { class: "muted" },
      first ? `${first.modelName} ${first.modelVersion} on ${first.framework}, ${scenarioName(first.scenario)}: ` : "",
      `${finished} of ${group.count} runs done`,
      group.agents.length === 1 ? ", all on agent " : ".",
      group.agents.length === 1 ? h("code", {}, group.agents[0]) : null,
      group.agents.length === 1 ? "." : null,
      ids.length >= 2 && ids.length <= MAX_COMPARED
        ? [" ", h("a", { href: compareUrl(ids) }, "Compare them side by side")]
        : null),
    group.agents.length > 1
      ? h("p", { class: "notice warn", role: "status", "data-mixed-agents": String(group.agents.length) },
        h("strong", {}, "The spread mixes machines: "),
        `these runs ran on ${group.agents.length} agents (${group.agents.join(", ")}), ` +
        "so it measures the difference between them as well as run-to-run noise.")
      : null,
    h("section", { class: "card" },
      h("h2", {}, "Runs"),
      measured(group).length
        ? chartBox("repeats", "Samples per second of each run")
        : h("p", { class: "muted chart-pending" }, "The chart draws each run once it is stored."),
      h("p", { class: "hint" },
        "One bar per run; a hollow bar's run is not VALID and STABLE, so its figures are not results to quote. " +
        "Error bars: each run's own 95 % interval. The dashed line is the median over the runs; the shaded " +
        "band, where there is one, its 95 % interval over the VALID runs."),
      runsTable(group)),
    h("section", { class: "card" },
      h("h2", {}, "Spread over the runs"),
      spreadTable(group),
      h("p", { class: "hint" },
        "CV: the sample standard deviation over the mean. The interval is a bootstrap over the VALID runs, " +
        "not over windows of one run.")),
  ];
}

function runsTable(group) {
  const timed = !offline(group);
  const head = ["Run", "State", "Samples/s", ...(timed ? ["p50 ms", "p90 ms", "p99 ms"] : []), "Verdicts", "Agent", "Evaluation"];
  return h("div", { class: "table-wrap" },
    h("table", { class: "data", "data-repeats": String(group.repeats.length) },
      h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, group.repeats.map((r) => {
        const run = r.run;
        return h("tr", {},
          h("td", { class: "num" }, String(r.index + 1)),
          h("td", {}, stateBadge(r.evaluation.state)),
          h("td", { class: "num" }, number(run?.samplesPerSecond)),
          timed ? h("td", { class: "num" }, number(metric(run, "latency_p50")?.value, 3)) : null,
          timed ? h("td", { class: "num" }, number(metric(run, "latency_p90")?.value, 3)) : null,
          timed ? h("td", { class: "num" }, number(metric(run, "latency_p99")?.value, 3)) : null,
          h("td", { class: "nowrap" }, run ? [verdictBadge(run.validity, "validity"), " ", verdictBadge(run.stability ?? DASH, "stability"), " ", busyBadge(run)] : DASH),
          h("td", {}, r.evaluation.agentId ? h("code", { class: "small" }, r.evaluation.agentId) : DASH),
          h("td", {}, h("a", { href: `#/evaluations/${r.evaluation.id}` }, shortId(r.evaluation.id))));
      }))));
}

function interval(group, name, shared) {
  const field = FIGURES[name]?.[2];
  const found = field ? group.confidence?.[field] : null;
  if (!found) return h("span", { class: "muted" }, group.confidence ? "not computed" : "no run stored yet");
  if (found.low == null || found.high == null) {
    // One reason for every figure is said once, under the table.
    return h("span", { class: "muted small" }, shared ? "none (see below)" : found.reason || DASH);
  }
  const digits = FIGURES[name][1];
  return `${number(found.low, digits)} – ${number(found.high, digits)}`;
}

// The reason no figure has an interval, when it is the same for all of them.
function sharedReason(group) {
  const intervals = group.spread.map((s) => group.confidence?.[FIGURES[s.name]?.[2]]);
  if (!intervals.length || intervals.some((i) => !i || i.low != null || i.high != null)) return "";
  const reasons = new Set(intervals.map((i) => i.reason));
  return reasons.size === 1 ? [...reasons][0] : "";
}

function spreadTable(group) {
  if (!group.spread.length) return h("p", { class: "muted" }, "No run stored yet.");
  const level = group.confidence?.level ? `${number(group.confidence.level * 100, 0)} %` : "95 %";
  const head = ["Figure", "Unit", "Runs", "Min", "Median", "Max", "CV", `${level} interval over runs`];
  const figures = offline(group) ? group.spread.filter((s) => !s.name.startsWith("latency")) : group.spread;
  const shared = sharedReason({ ...group, spread: figures });
  return [
    h("div", { class: "table-wrap" },
      h("table", { class: "data", "data-spread": String(group.spread.length) },
        h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, figures.map((s) => {
          const [label, digits] = FIGURES[s.name] ?? [s.name, 3];
          return h("tr", { "data-figure": s.name },
            h("th", { scope: "row" }, label),
            h("td", {}, s.unit),
            h("td", { class: "num" }, String(s.count)),
            h("td", { class: "num" }, number(s.min, digits)),
            h("td", { class: "num" }, number(s.median, digits)),
            h("td", { class: "num" }, number(s.max, digits)),
            h("td", { class: "num" }, s.cv == null ? DASH : `${number(s.cv * 100, 2)} %`),
            h("td", {}, interval(group, s.name, Boolean(shared))));
        })))),
    shared ? h("p", { class: "reason", "data-interval-reason": "" }, h("strong", {}, "No interval over runs: "), shared) : null,
    figures.length < group.spread.length
      ? h("p", { class: "small muted", "data-offline-note": "" },
        "Offline issues every sample at once: a latency is a sample's place in the queue, not the system's, so no latency figure is shown.")
      : null,
  ];
}

function bars(group) {
  const runs = measured(group);
  return [{
    type: "bar",
    name: "Samples/s",
    x: runs.map((r) => `run ${r.index + 1}`),
    y: runs.map((r) => r.run.samplesPerSecond),
    // Each run's own 95 % interval (over its stability windows), where it has one.
    error_y: intervalBars(runs.map((r) => r.run.samplesPerSecond), runs.map((r) => r.run.confidence?.samplesPerSecond)),
    marker: {
      color: runs.map((r) => (quotable(r.run) ? SERIES[0] : "rgba(0,0,0,0)")),
      line: { color: SERIES[0], width: 2 },
    },
    hovertemplate: "%{x}: %{y:.1f} samples/s<extra></extra>",
  }];
}

function barAxes(group) {
  const median = group.spread.find((s) => s.name === "samples_per_second")?.median;
  const layout = {
    xaxis: { title: { text: "Run" }, type: "category" },
    yaxis: { title: { text: "Samples/s" }, rangemode: "tozero" },
    bargap: 0.6,
  };
  if (median != null) {
    layout.shapes = [{
      type: "line", xref: "paper", x0: 0, x1: 1, y0: median, y1: median,
      line: { color: SERIES[1], width: 1.5, dash: "dash" },
    }];
    // The interval over the runs (a bootstrap over the VALID runs), as a band.
    const over = group.confidence?.samplesPerSecond;
    if (over && over.low != null && over.high != null) {
      layout.shapes.push({
        type: "rect", xref: "paper", x0: 0, x1: 1, y0: over.low, y1: over.high,
        fillcolor: SERIES[1], opacity: 0.12, line: { width: 0 }, layer: "below",
      });
    }
    layout.annotations = [{
      xref: "paper", x: 1, xanchor: "right", y: median, yanchor: "bottom", showarrow: false,
      text: `median ${number(median, 1)}`, font: { color: SERIES[1] },
    }];
  }
  return layout;
}
