// One find-peak search (#/find-peak/<groupId>): its probes as they run, each judged against
// the latency bound, and at the end the peak (or why there is none, and what would give one).
// The chart puts every stored probe at its offered rate and its latency at the percentile.

import { h } from "../dom.js";
import { SERIES, chartBox, intervalBars } from "../charts.js";
import { DASH, inFormWords, number, shortId } from "../format.js";
import { busyBadge } from "../figures.js";
import { FIND_PEAK } from "../queries.js";
import { stateBadge, verdictBadge } from "../widgets.js";
import { renderGroupPage } from "./group_page.js";

const OVER = "#d1495b";

export function renderFindPeak(main, signal, groupId) {
  return renderGroupPage(main, signal, groupId, {
    title: "Find peak",
    loading: "the search",
    missing: "find-peak search",
    query: FIND_PEAK,
    field: "findPeak",
    view,
    chart: "find-peak",
    figure: (search) => (plotted(search).length ? [traces(search), axes(search)] : null),
    settled: (search) => search.state !== "searching",
  });
}

// "p99", "p99.9": the percentile as LoadGen names it.
function pct(search) {
  return `p${number(search.percentile, 1)}`;
}

function bound(search) {
  return `${pct(search)} ≤ ${number(search.latencyBoundMs, 3)} ms`;
}

function stored(search) {
  return search.probes.filter((p) => p.runId != null);
}

// Probes the chart can place: stored, with a latency figure.
function plotted(search) {
  return stored(search).filter((p) => p.latencyMs != null);
}

function isPeak(search, probe) {
  return search.peakRunId != null && probe.runId === search.peakRunId;
}

function view(search) {
  const first = search.probes[0]?.evaluation ?? search.estimate;
  const what = first ? `${first.modelName} ${first.modelVersion} on ${first.framework}` : "";
  const count = `${search.probes.length} probe${search.probes.length === 1 ? "" : "s"} of at most ${search.maxProbes}`;
  const missing = stored(search).length - plotted(search).length;
  return [
    h("p", { class: "status-line find-peak-summary" },
      h("span", {},
        what ? `${what}: ` : "", h("strong", {}, bound(search)),
        `, tolerance ${number(search.tolerance * 100, 1)} %; ${count}.`),
      h("span", { class: `badge search-${search.state}`, "data-state": search.state }, search.state)),
    outcome(search),
    h("section", { class: "card" },
      h("h2", {}, "Probes"),
      plotted(search).length
        ? chartBox("find-peak", `Latency at ${pct(search)} against offered QPS, one point per probe, with the bound`)
        : h("p", { class: "muted chart-pending" }, "The chart draws each probe once its run is stored."),
      h("p", { class: "hint" },
        `Each point is one probe: a filled dot is within the bound and judged (VALID, stability known), ` +
        `a hollow dot is within the bound but not judged, a red cross is over the bound. ` +
        `The dashed line is the bound; the labels give the order the probes ran in. Error bars: the latency's ` +
        `95 % interval (SUT clock), where the probe's run gives one.`),
      missing > 0
        ? h("p", { class: "hint" }, `${missing} stored probe${missing === 1 ? " has" : "s have"} no latency figure; see the table.`)
        : null,
      table(search)),
  ];
}

function outcome(search) {
  const start = startLine(search);
  if (search.state === "failed") {
    return h("section", { class: "card", "data-outcome": "failed" },
      h("h2", {}, "The search failed"),
      h("p", { class: "reason error" }, search.verdict || "no reason given"),
      start);
  }
  if (search.state !== "done") {
    return h("section", { class: "card", "data-outcome": "searching" },
      h("h2", {}, "Searching"),
      h("p", { class: "muted" }, "Each probe is one Server run; the next one is chosen when it is stored."),
      start);
  }
  if (search.verdict === "peak" && search.peakQps != null) {
    return h("section", { class: "card", "data-outcome": "peak" },
      h("h2", {}, "Peak"),
      h("div", { class: "figures" },
        h("div", { class: "figure" },
          h("div", { class: "figure-label" }, "Peak QPS"),
          h("div", { class: "figure-value", "data-peak-qps": String(search.peakQps) }, number(search.peakQps, 1)),
          // The peak is a probe's figure: it carries that probe's busy host.
          busyBadge(probeRun(search.probes.find((p) => p.runId && p.runId === search.peakRunId)))),
        h("div", { class: "figure" },
          h("div", { class: "figure-label" }, `${pct(search)} latency at the peak`),
          h("div", { class: "figure-value" }, number(search.peakLatencyMs, 3), h("span", { class: "unit" }, " ms")))),
      search.reason ? h("p", { class: "reason" }, search.reason) : null,
      adviceList(search),
      start);
  }
  return h("section", { class: "card", "data-outcome": "no-peak" },
    h("h2", {}, "No valid peak"),
    h("p", { class: "reason error" }, search.reason || search.verdict),
    adviceList(search),
    start);
}

function adviceList(search) {
  if (!search.advice.length) return null;
  return h("div", {},
    h("h3", {}, "What would give a valid peak"),
    h("ul", { class: "advice" }, search.advice.map((a) => h("li", {}, inFormWords(a)))));
}

function startLine(search) {
  const rate = search.startQps == null ? DASH : `${number(search.startQps, 1)} QPS`;
  if (!search.estimate) return h("p", { class: "small muted" }, `Started at ${rate}, as given.`);
  const e = search.estimate;
  return h("p", { class: "small muted" },
    `Started at ${rate}: the throughput of an Offline capacity estimate (`,
    h("a", { href: `#/evaluations/${e.id}` }, shortId(e.id)), " ", stateBadge(e.state), ").");
}

function passedBadge(probe) {
  if (probe.passed == null) return h("span", { class: "muted" }, DASH);
  return probe.passed
    ? h("span", { class: "badge tone-good" }, "within")
    : h("span", { class: "badge tone-bad" }, "over");
}

// The stored run of a probe, with its shown figures (BUSY among their verdicts).
function probeRun(probe) {
  const runs = probe?.evaluation?.runs ?? [];
  return runs.find((r) => r.id === probe.runId) ?? runs[runs.length - 1] ?? null;
}

function table(search) {
  const head = ["#", "Offered QPS", "State", "Bound", `${pct(search)} ms`, "Completed QPS", "Verdicts", "Reason", "Evaluation"];
  return h("div", { class: "table-wrap" },
    h("table", { class: "data", "data-probes": String(search.probes.length) },
      h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, search.probes.map((p, i) => h("tr", isPeak(search, p) ? { "data-peak": "yes" } : {},
        h("td", { class: "num" }, String(i + 1)),
        h("td", { class: "num" }, number(p.qps, 1), isPeak(search, p) ? [" ", h("span", { class: "badge tone-good" }, "PEAK")] : null),
        h("td", {}, stateBadge(p.evaluation.state)),
        h("td", {}, passedBadge(p)),
        h("td", { class: "num" }, number(p.latencyMs, 3)),
        h("td", { class: "num" }, number(p.completedQps, 1)),
        h("td", { class: "nowrap" }, p.validity ? [verdictBadge(p.validity, "validity"), " ", verdictBadge(p.stability ?? DASH, "stability"), " ", busyBadge(probeRun(p))] : DASH),
        h("td", { class: "small" }, p.reason || p.evaluation.reason || DASH),
        h("td", {}, h("a", { href: `#/evaluations/${p.evaluation.id}` }, shortId(p.evaluation.id))))))));
}

function traces(search) {
  const order = new Map(search.probes.map((p, i) => [p, i + 1]));
  const groups = [
    { name: "within, judged", keep: (p) => p.passed && p.judged, color: SERIES[0], symbol: "circle", fill: SERIES[0] },
    { name: "within, not judged", keep: (p) => p.passed && !p.judged, color: SERIES[0], symbol: "circle", fill: "rgba(0,0,0,0)" },
    { name: "over the bound", keep: (p) => !p.passed, color: OVER, symbol: "x", fill: OVER },
  ];
  return groups
    .map((g) => ({ ...g, probes: plotted(search).filter(g.keep) }))
    .filter((g) => g.probes.length)
    .map((g) => ({
      type: "scatter",
      mode: "markers+text",
      name: g.name,
      x: g.probes.map((p) => p.qps),
      y: g.probes.map((p) => p.latencyMs),
      // The judged latency's 95 % interval (SUT clock), where the probe's run gives one.
      error_y: { ...intervalBars(g.probes.map((p) => p.latencyMs), g.probes.map((p) => p.latencyInterval)), color: g.color },
      text: g.probes.map((p) => `#${order.get(p)}`),
      textposition: "top center",
      marker: { size: 12, symbol: g.symbol, color: g.fill, line: { color: g.color, width: 2 } },
      hovertemplate: `%{text}: %{x:.1f} QPS offered, ${pct(search)} %{y:.3f} ms<extra>${g.name}</extra>`,
    }));
}

function axes(search) {
  const latencies = plotted(search).map((p) => p.latencyMs);
  const top = Math.max(search.latencyBoundMs, ...latencies) * 1.2;
  const annotations = [{
    xref: "paper", x: 1, xanchor: "right", y: search.latencyBoundMs, yanchor: "bottom",
    text: `bound ${bound(search)}`, showarrow: false, font: { color: OVER },
  }];
  const peak = plotted(search).find((p) => isPeak(search, p));
  if (peak) {
    annotations.push({
      x: peak.qps, y: peak.latencyMs, text: `peak ${number(search.peakQps, 1)} QPS`,
      showarrow: true, arrowhead: 2, ax: -50, ay: -36, font: { color: SERIES[2] }, arrowcolor: SERIES[2],
    });
  }
  return {
    showlegend: true,
    xaxis: { title: { text: "Offered QPS" }, rangemode: "tozero" },
    yaxis: { title: { text: `${pct(search)} latency (ms)` }, range: [0, top] },
    shapes: [{
      type: "line", xref: "paper", x0: 0, x1: 1, y0: search.latencyBoundMs, y1: search.latencyBoundMs,
      line: { color: OVER, width: 1.5, dash: "dash" },
    }],
    annotations,
  };
}
