// The generative workload's section of the run page (Workload.web_view): what it served
// (engine, endpoint, scenario, prompts), LoadGen's verdict with its reasons, whether the
// TTFT and TPOT bounds were met, every token figure with its 95 % interval beside
// LoadGen's, the requests (failed ones by reason) and the TTFT and TPOT CDFs. Its figures
// come from its own query (Run.generative), so the page's query names no workload.

import { gql } from "/static/js/api.js";
import { CDF_AXES, SERIES, chartBox, intervalBars, plot } from "/static/js/charts.js";
import { h, replace } from "/static/js/dom.js";
import { DASH, latestRun, number, when } from "/static/js/format.js";
import { notice, verdictBadge } from "/static/js/widgets.js";

const GENERATIVE = `
query GenerativeRun($id: String!) {
  evaluation(id: $id) {
    id
    runs {
      id
      generative {
        settings { key label value }
        figures { name label unit estimate low high intervalReason loadgen }
        intervalRule validity validityReasons stability stabilityReasons targetQps
        bounds { ttftMs tpotMs percentile source met }
        requests { issued completed failed outputTokens failures { reason count } }
        ttftCdf { count valuesMs fractions }
        tpotCdf { count valuesMs fractions }
      }
    }
  }
}`;

export function sections(evaluation, run, page) {
  const overview = page.card("Generative evaluation", "overview-title", page.definitions([
    ["Model", `${evaluation.modelName} ${evaluation.modelVersion}`],
    ["Measurement", "a language model's requests under LoadGen with token latencies"],
    ["Agent", evaluation.agentId ?? DASH],
    ["Submitted", when(evaluation.createdAt)],
    ["Finished", when(evaluation.finishedAt)],
    ["Id", h("code", {}, evaluation.id)],
  ]));
  const shown = [overview];
  if (run) {
    const slot = h("div", { "data-workload": "generative", "aria-busy": "true" }, notice("Loading the run's token figures…"));
    load(slot, evaluation.id, run.id, page.signal);
    shown.push(slot, page.environment(run), page.metricsTable(run), page.logs(run));
  }
  return shown;
}

async function load(slot, evaluationId, runId, signal) {
  let data;
  try {
    data = await gql(GENERATIVE, { id: evaluationId });
  } catch (err) {
    if (!signal.aborted) replace(slot, notice(err.message, "error"));
    return;
  }
  if (signal.aborted) return;
  const g = data.evaluation?.runs?.find((r) => r.id === runId)?.generative;
  slot.setAttribute("aria-busy", "false");
  if (!g) {
    replace(slot, notice("This run stored no generative figures.", "info"));
    return;
  }
  const ttft = chartBox("generative-ttft-cdf", `Cumulative distribution of ${g.ttftCdf.count} times to first token`);
  const tpot = chartBox("generative-tpot-cdf", `Cumulative distribution of ${g.tpotCdf.count} times per output token`);
  replace(slot, settingsCard(g), headline(g), figuresCard(g), requestsCard(g),
    card("Token latency distributions", "generative-cdf-title",
      h("div", { class: "chart-pair" },
        h("figure", {}, ttft, h("figcaption", {}, "TTFT")),
        h("figure", {}, tpot, h("figcaption", {}, "TPOT"))),
      h("p", { class: "small muted" }, "Each completed request's value; a dashed line marks the bound where the run had one.")));
  drawCdf(ttft, g.ttftCdf, "TTFT", g.bounds?.ttftMs, 0);
  drawCdf(tpot, g.tpotCdf, "TPOT", g.bounds?.tpotMs, 1);
}

function card(title, id, ...children) {
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

function settingsCard(g) {
  return card("What it served", "generative-settings-title",
    h("dl", { class: "pairs" }, g.settings.map((s) => [h("dt", {}, s.label), h("dd", { "data-setting": s.key }, s.value)])));
}

function boundsText(bounds) {
  if (!bounds) return "no TTFT/TPOT bounds (a Server run sets them)";
  return `TTFT ≤ ${number(bounds.ttftMs, 1)} ms and TPOT ≤ ${number(bounds.tpotMs, 1)} ms at p${bounds.percentile} (${bounds.source})`;
}

function headline(g) {
  const met = g.bounds ? { true: "BOUNDS MET", false: "BOUNDS NOT MET" }[g.bounds.met] ?? "BOUNDS NOT JUDGED" : null;
  const tone = { true: "good", false: "bad" }[g.bounds?.met] ?? "neutral";
  const state = { true: "met", false: "not-met" }[g.bounds?.met] ?? "not-judged";
  const title = h("span", {}, "LoadGen's verdict ", verdictBadge(g.validity, "LoadGen validity"), " ",
    verdictBadge(g.stability, "stability"),
    met ? [" ", h("span", { class: `badge tone-${tone}`, "data-bounds": state }, met)] : null);
  return card(title, "generative-verdict-title",
    h("p", { "data-role": "bounds" }, boundsText(g.bounds)),
    g.targetQps ? h("p", { class: "small muted" }, `Target rate: ${number(g.targetQps, 3)} requests/s (Poisson).`) : null,
    g.validityReasons.length ? h("ul", { "data-role": "validity-reasons" }, g.validityReasons.map((r) => h("li", {}, r))) : null,
    g.stabilityReasons.length ? h("ul", { class: "small muted" }, g.stabilityReasons.map((r) => h("li", {}, r))) : null);
}

function interval(f) {
  if (f.low === null || f.low === undefined) return h("span", { class: "muted", title: f.intervalReason }, "no interval");
  return `[${number(f.low, 2)}, ${number(f.high, 2)}]`;
}

function figuresCard(g) {
  const rows = g.figures.map((f) => h("tr", { "data-metric": f.name },
    h("th", { scope: "row" }, f.label), h("td", {}, number(f.estimate, 2)), h("td", {}, interval(f)),
    h("td", {}, number(f.loadgen, 2)), h("td", {}, f.unit)));
  return card("Token figures", "generative-figures-title",
    h("table", {},
      h("thead", {}, h("tr", {}, ["Figure", "Estimate", "95 % interval", "LoadGen", "Unit"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows)),
    h("p", { class: "small muted" }, g.intervalRule));
}

function requestsCard(g) {
  const r = g.requests;
  return card("Requests", "generative-requests-title",
    h("p", {}, `${r.completed} of ${r.issued} completed, ${r.failed} failed; ${r.outputTokens} output tokens.`),
    r.failures.length ? h("ul", { "data-role": "failures" }, r.failures.map((f) => h("li", {}, `${f.count} × ${f.reason}`))) : null);
}

function drawCdf(box, cdf, name, bound, index) {
  if (!cdf.count) {
    replace(box, notice(`No completed request gave a ${name}.`, "info"));
    return;
  }
  const traces = [{
    type: "scatter", mode: "lines", name, line: { shape: "hv", color: SERIES[index], width: 2 },
    x: cdf.valuesMs, y: cdf.fractions.map((f) => f * 100),
    hovertemplate: `%{x:.3f} ms: %{y:.2f} % of requests at or below<extra>${name}</extra>`,
  }];
  if (bound) {
    traces.push({ type: "scatter", mode: "lines", name: `${name} bound`, x: [bound, bound], y: [0, 100],
      line: { color: "#b91c1c", dash: "dash", width: 1.5 }, hovertemplate: `bound ${bound} ms<extra></extra>` });
  }
  plot(box, traces, { ...CDF_AXES, xaxis: { title: { text: `${name} (ms)` } }, yaxis: { ...CDF_AXES.yaxis, title: { text: "Requests at or below (%)" } } });
}

// The compare page's part (views/compare_workloads.js): each evaluation's settings as its
// run states them (the endpoint, the served model: a fan-out's members differ there), and
// the token figures side by side with their 95 % intervals and an output tokens/s chart.
const COMPARED = ["output_tokens_per_s", "requests_per_s", "goodput", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p50"];

export async function compare(evaluations) {
  const found = await Promise.all(evaluations.map(async (e) => {
    const run = latestRun(e);
    if (!run) return [e, null];
    const data = await gql(GENERATIVE, { id: e.id });
    return [e, data.evaluation?.runs?.find((r) => r.id === run.id)?.generative ?? null];
  }));
  const settings = new Map();
  for (const [e, g] of found) {
    const options = e.workloadOptions ?? {};
    settings.set(e.id, g ? g.settings.map((s) => [s.label, s.value]) : Object.entries(options).map(([k, v]) => [k, String(v)]));
  }
  return { settings, cards: (labelOf) => compareCards(found, labelOf) };
}

function compareCards(found, labelOf) {
  const heads = found.map(([e]) => h("th", { scope: "col", "data-id": e.id }, h("a", { href: `#/evaluations/${e.id}` }, labelOf.get(e.id))));
  const cell = (g, name) => {
    const f = g?.figures.find((x) => x.name === name);
    if (!f) return h("td", {}, DASH);
    return h("td", { class: "num" }, number(f.estimate, 2), " ", h("span", { class: "unit" }, f.unit), h("div", { class: "small muted" }, interval(f)));
  };
  const label = (name) => found.map(([, g]) => g?.figures.find((x) => x.name === name)?.label).find(Boolean) ?? name;
  const rows = [
    h("tr", { "data-verdict": "validity" }, h("th", { scope: "row" }, "LoadGen validity"), found.map(([, g]) => h("td", {}, verdictBadge(g?.validity, "LoadGen validity")))),
    h("tr", { "data-verdict": "bounds" }, h("th", { scope: "row" }, "Bounds"), found.map(([, g]) => h("td", {}, g?.bounds ? boundsText(g.bounds) : DASH))),
    ...COMPARED.map((name) => h("tr", { "data-metric": name }, h("th", { scope: "row" }, label(name)), found.map(([, g]) => cell(g, name)))),
  ];
  const chart = chartBox("generative-compare-tokens", "Output tokens/s of each evaluation with its 95 % interval");
  const tokens = found.map(([, g]) => g?.figures.find((x) => x.name === "output_tokens_per_s") ?? null);
  const values = tokens.map((f) => f?.estimate ?? null);
  queueMicrotask(() => plot(chart, [{
    type: "bar", x: found.map(([e]) => labelOf.get(e.id)), y: values, marker: { color: SERIES[0] },
    error_y: intervalBars(values, tokens), hovertemplate: "%{x}: %{y:.1f} tokens/s<extra></extra>",
  }], { yaxis: { title: { text: "Output tokens/s" }, rangemode: "tozero" } }));
  return [
    h("section", { class: "card", "aria-labelledby": "generative-compare-title", "data-workload": "generative" },
      h("h2", { id: "generative-compare-title" }, "Token figures side by side"),
      h("div", { class: "table-wrap" }, h("table", { class: "compare-table figures-table" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Figure"), heads)), h("tbody", {}, rows))),
      h("p", { class: "small muted" }, "Under each figure its 95 % interval (requests resampled for latencies, windows of completions for rates)."),
      chart),
  ];
}
