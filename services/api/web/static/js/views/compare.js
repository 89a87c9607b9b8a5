// Evaluations side by side: #/compare?ids=a,b,c (picked on the list) or #/compare?group=g
// (a fan-out). Settings that differ are marked, figures sit beside their verdicts, and the
// charts overlay the latency CDFs (not Offline's) and put throughput and p99 next to each other, with error bars. The URL
// is the comparison: copy it to share it.

import { gql } from "../api.js";
import { h, replace } from "../dom.js";
import { CDF_AXES, SERIES, cdfTrace, chartBox, intervalBars, plot } from "../charts.js";
import {
  DASH, differVerdict, isFinal, intervalOf, intervalText, judgedIntervalOf, latestRun, metric, number, scenarioName, shortId, stability,
} from "../format.js";
import { busyBadge, busyOf, figureCell, shownFigure } from "../figures.js";
import { COMPARED, GROUP, LATENCY_POINTS } from "../queries.js";
import { backToList, notice, openView, stateBadge, verdictBadge } from "../widgets.js";
import { workloadComparisons } from "./compare_workloads.js";
import { hostBadge, imagesInterval, isTraining, trainingSettings } from "./training.js";

export const MAX_COMPARED = 8;
const ID = /^[\w-]{1,64}$/;
// Fewer points per curve than on a run's page: up to eight curves share one chart.
const POINTS_PER_CURVE = Math.min(LATENCY_POINTS, 1000);
// How often the page looks again while some evaluations are not finished.
const POLL_MS = 1500;
// Looks again this many times more for a finished evaluation whose run or latency sample
// is not readable yet: its state can reach the page before the run's figures do (seen on
// a loaded host: both fan-out members SUCCEEDED, the CDF drawn with no curve, and the page
// no longer looking).
const LATE_FIGURE_POLLS = 20;

const FIGURES = [
  ["samples_per_second", "Samples/s", 1],
  ["latency_p50", "p50 latency (ms)", 3],
  ["latency_p90", "p90 latency (ms)", 3],
  ["latency_p99", "p99 latency (ms)", 3],
];

export function compareUrl(ids) {
  return `#/compare?ids=${ids.map(encodeURIComponent).join(",")}`;
}

export function renderCompare(main, signal, query = "") {
  const { heading, signedIn } = openView(main, "Compare evaluations", backToList());
  if (!signedIn) return heading;
  const body = h("div", { class: "compare", "aria-busy": "true" });
  main.append(body);
  const params = new URLSearchParams(query);
  load(body, signal, params).finally(() => body.setAttribute("aria-busy", "false"));
  return heading;
}

async function load(body, signal, params) {
  const notes = [];
  let ids;
  try {
    ids = await wantedIds(params, notes);
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
    return;
  }
  if (signal.aborted) return;
  if (ids.length < 2) {
    replace(body, ...notes.map((n) => notice(n, "error")),
      notice("Pick at least two evaluations with the checkboxes on the list, then choose “Compare selected”."));
    return;
  }
  replace(body, notice(`Loading ${ids.length} evaluations…`));
  await refresh(body, signal, ids, notes, "", 0);
}

// Fetches the evaluations and redraws when anything changed; while some are not finished
// (a fan-out just submitted), it looks again every POLL_MS, so the page fills in as they end,
// and up to LATE_FIGURE_POLLS times more while a finished one's figures are not there yet.
async function refresh(body, signal, ids, notes, drawn, late) {
  let found;
  try {
    found = await Promise.all(ids.map((id) => gql(COMPARED, { id, points: POINTS_PER_CURVE })));
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
    return;
  }
  if (signal.aborted) return;
  const evaluations = found.map((d) => d.evaluation).filter(Boolean);
  const missing = ids.filter((id) => !evaluations.some((e) => e.id === id));
  const shown = missing.length ? [...notes, `Not visible to you (or no such evaluation): ${missing.join(", ")}.`] : notes;
  if (!evaluations.length) {
    replace(body, ...shown.map((n) => notice(n, "error")));
    return;
  }
  const state = JSON.stringify(evaluations);
  let own = { settings: new Map(), makers: [], ids: new Set() };
  let noted = shown;
  try {
    own = await workloadComparisons(evaluations);
  } catch (err) {
    noted = [...shown, `A workload's comparison did not load: ${err.message}`];
  }
  if (signal.aborted) return;
  if (state !== drawn) render(body, evaluations, noted, own);
  const running = !evaluations.every((e) => isFinal(e.state));
  if (running || (figuresPending(evaluations, own) && late < LATE_FIGURE_POLLS)) {
    const next = running ? late : late + 1;
    setTimeout(() => signal.aborted || refresh(body, signal, ids, notes, state, next), POLL_MS);
  }
}

// Whether a succeeded evaluation lacks its run, or (timed, not training) its latency sample.
function figuresPending(evaluations, own) {
  return evaluations.some((e) => {
    if (e.state !== "SUCCEEDED" || own.ids.has(e.id)) return false;
    const run = latestRun(e);
    if (!run) return true;
    return !isTraining(e, run) && !isOffline(e) && !run.latencySample?.totalCount;
  });
}

// The ids in the URL, or the fan-out group's; at most MAX_COMPARED, saying so when cut.
async function wantedIds(params, notes) {
  let ids = [];
  if (params.has("group")) {
    const groupId = params.get("group");
    if (!ID.test(groupId)) throw new Error(`group: “${groupId}” is not a group id (letters, digits, - and _).`);
    const comparison = (await gql(GROUP, { groupId })).compare;
    if (!comparison) throw new Error(`No fan-out group ${groupId} is visible to you.`);
    ids = comparison.rows.map((r) => r.evaluationId);
  } else {
    const raw = (params.get("ids") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    const bad = raw.filter((id) => !ID.test(id));
    if (bad.length) notes.push(`ids: left out ${bad.map((b) => `“${b}”`).join(", ")}: not evaluation ids (letters, digits, - and _).`);
    ids = [...new Set(raw.filter((id) => ID.test(id)))];
  }
  if (ids.length > MAX_COMPARED) {
    notes.push(`ids: ${ids.length} evaluations asked for; the first ${MAX_COMPARED} are compared (at most ${MAX_COMPARED}).`);
    ids = ids.slice(0, MAX_COMPARED);
  }
  return ids;
}

// Every setting a reader may want to line up, as text (missing: "—").
function settingsOf(e, own) {
  const run = latestRun(e);
  if (own.settings.has(e.id)) return workloadSettingsOf(e, run, own.settings.get(e.id));
  if (isTraining(e, run)) return trainingSettingsOf(e, run);
  const pairs = [
    ["Model", `${e.modelName} ${e.modelVersion}`],
    ["Framework", `${e.framework}${run?.frameworkVersion ? ` ${run.frameworkVersion}` : ""}`],
    ["Device", e.device],
    ["Scenario", scenarioName(e.scenario)],
  ];
  const scenario = typeof e.scenario === "object" && e.scenario ? e.scenario : {};
  for (const [key, value] of Object.entries(scenario).sort(([a], [b]) => a.localeCompare(b))) {
    if (key === "scenario" || value === null || value === undefined || typeof value === "object") continue;
    pairs.push([`scenario.${key}`, String(value)]);
  }
  pairs.push(
    ["Batch size", String(e.batchSize)],
    ["Dataset", `${e.dataset}${e.samples ? `, ${e.samples} samples` : ""}`],
    ["Trace level", e.traceLevel],
    // The intra-op threads the agent applied to the run (the evaluation's own when asked).
    ["Threads", appliedThreads(run)],
    ["Agent", e.agentId ?? DASH],
  );
  return new Map(pairs.map(([k, v]) => [k, v ?? DASH]));
}

// A training evaluation's: what it trained with, not a LoadGen scenario it never ran.
function trainingSettingsOf(e, run) {
  const pairs = [
    ["Model", `${e.modelName} ${e.modelVersion}`],
    ["Framework", `${e.framework}${run?.frameworkVersion ? ` ${run.frameworkVersion}` : ""}`],
    ["Device", e.device],
    ["Workload", "training"],
    ...trainingSettings(e, run).map(([label, value]) => [label, value]),
    ["Agent", e.agentId ?? DASH],
  ];
  return new Map(pairs.map(([k, v]) => [k, v ?? DASH]));
}

// A workload's own (compare_workloads.js): what its module says it ran with.
function workloadSettingsOf(e, run, pairs) {
  return new Map([
    ["Model", `${e.modelName} ${e.modelVersion}`],
    ["Workload", e.workload],
    ...pairs,
    ["Agent", e.agentId ?? DASH],
  ].map(([k, v]) => [k, v ?? DASH]));
}

function appliedThreads(run) {
  const threads = run?.settings?.backend_options?.intra_op_threads;
  return threads ? String(threads) : DASH;
}

function render(body, evaluations, notes, own) {
  const settings = evaluations.map((e) => settingsOf(e, own));
  const keys = [...new Set(settings.flatMap((s) => [...s.keys()]))];
  const differs = new Set(keys.filter((k) => new Set(settings.map((s) => s.get(k) ?? DASH)).size > 1));
  // A column's name: its short id and the differing settings that tell it apart (the agent
  // aside, which is long and differs in every fan-out).
  const telling = [...differs].filter((k) => k !== "Agent").slice(0, 2);
  const labels = evaluations.map((e, i) => {
    const extra = telling.map((k) => `${k.replace(/^scenario\./, "")}=${settings[i].get(k) ?? DASH}`).join(", ");
    return extra ? `${shortId(e.id)} (${extra})` : shortId(e.id);
  });
  const share = h("a", { href: compareUrl(evaluations.map((e) => e.id)), class: "share-link" }, "Link to this comparison");
  replace(body,
    ...notes.map((n) => notice(n, "error")),
    h("p", { class: "small muted" }, `${evaluations.length} evaluations. `, share,
      " (copy it to share; the people you share it with see only their own evaluations)."),
    unfinished(evaluations),
    settingsCard(evaluations, settings, keys, differs, labels),
    ...(evaluations.some((e) => isTraining(e, latestRun(e)))
      ? [trainingFiguresCard(evaluations, labels), trainingChartsCard(evaluations, labels)]
      : []),
    ...own.makers.flatMap((cards) => cards(new Map(evaluations.map((e, i) => [e.id, labels[i]])))),
    ...(evaluations.some((e) => !isTraining(e, latestRun(e)) && !own.ids.has(e.id))
      ? [figuresCard(evaluations, labels), chartsCard(evaluations, labels)]
      : []));
}

function unfinished(evaluations) {
  const done = evaluations.filter((e) => isFinal(e.state)).length;
  if (done === evaluations.length) return null;
  const line = notice(`${done} of ${evaluations.length} finished; this page updates as the others finish.`);
  line.dataset.pending = String(evaluations.length - done);
  return line;
}

function columnHeads(evaluations, labels) {
  return evaluations.map((e, i) =>
    h("th", { scope: "col", "data-id": e.id },
      h("span", { class: "series-key", "data-series": i % SERIES.length }, "■ "),
      h("a", { href: `#/evaluations/${e.id}` }, labels[i]), " ", stateBadge(e.state)));
}

function settingsCard(evaluations, settings, keys, differs, labels) {
  return h("section", { class: "card", "aria-labelledby": "settings-title" },
    h("h2", { id: "settings-title" }, "Settings"),
    h("p", { class: "small muted" },
      differs.size ? `${differs.size} setting${differs.size === 1 ? " differs" : "s differ"}, marked “differs”.` : "Every setting is the same."),
    h("div", { class: "table-wrap" },
      h("table", { class: "compare-table settings" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Setting"), columnHeads(evaluations, labels))),
        h("tbody", {}, keys.map((key) => {
          const differ = differs.has(key);
          return h("tr", { class: differ ? "differs" : null, "data-setting": key, "data-differs": differ ? "yes" : "no" },
            h("th", { scope: "row" }, key, differ ? h("span", { class: "badge tone-warn differs-tag" }, "differs") : null),
            settings.map((s) => h("td", {}, s.get(key) ?? DASH)));
        })))));
}

const blank = () => h("td", {});

// A figures card's heading and table: a row per figure, a column per evaluation, and a last
// column of each later evaluation's verdict against the first.
function figuresTable(id, title, tableClass, evaluations, labels, ...rows) {
  return [
    h("h2", { id }, title),
    h("div", { class: "table-wrap" },
      h("table", { class: `compare-table figures-table ${tableClass}`.trim() },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Figure"), columnHeads(evaluations, labels),
          h("th", { scope: "col" }, `Beyond the 95 % intervals? (vs ${labels[0]})`))),
        h("tbody", {}, ...rows))),
  ];
}

// The verdict cell: each later run against the first (judge(run) -> [verdict, why]), the why
// on hover, and under the badge too when showWhy.
function beyondCell(versus, judge, showWhy = false) {
  return h("td", { class: "beyond" },
    versus.map(([run, label]) => {
      const [verdict, why] = judge(run);
      const tone = verdict === "differ" ? "tone-warn" : verdict === "cannot say" ? "tone-muted" : "tone-ok";
      return h("div", { "data-versus": label, "data-beyond": verdict, title: why },
        versus.length > 1 ? `${label}: ` : null, h("span", { class: `badge ${tone}` }, verdict),
        showWhy ? h("div", { class: "small muted" }, why) : null);
    }));
}

function figuresCard(evaluations, labels) {
  const runs = evaluations.map(latestRun);
  // Each later evaluation against the first, as the CLI's compare judges a pair.
  const versus = runs.slice(1).map((run, i) => [run, labels[i + 1]]);
  const verdictCell = (name) =>
    beyondCell(versus, (run) => differVerdict(judgedIntervalOf(runs[0], name), judgedIntervalOf(run, name)));
  const figureRow = ([name, label, digits]) =>
    h("tr", { "data-metric": name },
      h("th", { scope: "row" }, label),
      runs.map((run) => {
        // The one rule's figure (none for an Offline latency), BUSY beside it where the
        // host was busy; a training run keeps its own table below.
        const figure = shownFigure(run, name);
        if (!figure) return h("td", { class: "num" }, DASH);
        const interval = intervalOf(run, name);
        const shown = intervalText(interval, digits);
        return h("td", { class: "num" }, figureCell(run, name, digits),
          h("div", { class: "small muted", "data-interval": shown ? "yes" : "no", title: interval?.reason || null },
            shown ?? "no interval"));
      }),
      verdictCell(name));
  return h("section", { class: "card", "aria-labelledby": "figures-title" },
    ...figuresTable("figures-title", "Figures and verdicts", "", evaluations, labels,
      h("tr", { "data-verdict": "validity" }, h("th", { scope: "row" }, "LoadGen validity"),
        runs.map((run) => h("td", {}, verdictBadge(run?.validity, "LoadGen validity"))), blank()),
      h("tr", { "data-verdict": "stability" }, h("th", { scope: "row" }, "Stability"),
        runs.map((run) => h("td", {}, verdictBadge(stability(run) ?? run?.stability, "stability"))), blank()),
      h("tr", { "data-verdict": "host" }, h("th", { scope: "row" }, "Host"),
        runs.map((run) => h("td", {}, busyBadge(run) ?? (busyOf(run).busy === false ? "not busy" : DASH))), blank()),
      FIGURES.map(figureRow)),
    h("p", { class: "small muted" },
      "Under each figure its 95 % interval (a bootstrap over the run's stability windows; latencies on the SUT's clock). ",
      "“differ” means the two intervals do not overlap; hover a verdict or a missing interval for why. ",
      "An INVALID or UNSTABLE figure is not a result to quote; in the bar charts below its bar is hatched."));
}

function verdictText(run) {
  if (!run) return "no run";
  return `${run.validity ?? DASH} · ${stability(run) ?? run.stability ?? "STABILITY UNKNOWN"}`;
}

function quotable(run) {
  return run?.validity === "VALID" && (stability(run) ?? run?.stability) === "STABLE";
}

// Offline issues every sample at once: a sample's latency is its place in the queue, not
// the system's latency, so Offline runs get no latency distribution and no p99 bar.
function isOffline(evaluation) {
  const scenario = typeof evaluation.scenario === "object" && evaluation.scenario ? evaluation.scenario.scenario : evaluation.scenario;
  return scenario === "offline";
}

// Error bars from a figure's stored 95 % interval; none where it has none.
function errorBars(runs, name, values) {
  return intervalBars(values, runs.map((run) => intervalOf(run, name)));
}

function chartsCard(evaluations, labels) {
  const runs = evaluations.map(latestRun);
  const timed = evaluations.map((e, i) => i).filter((i) => !isOffline(evaluations[i]));
  const offlineNote = timed.length < evaluations.length
    ? h("p", { class: "small muted", "data-offline-note": "" },
      `${evaluations.length - timed.length} Offline evaluation${evaluations.length - timed.length === 1 ? "" : "s"} `,
      "get no latency curve nor p99 bar: Offline issues every sample at once, so a sample's latency is its place in the queue, not the system's.")
    : null;
  const cdf = timed.length ? chartBox("compare-cdf", `Latency CDFs of ${timed.length} evaluations, overlaid`) : null;
  const throughput = chartBox("compare-throughput", "Throughput of each evaluation");
  const p99 = timed.length ? chartBox("compare-p99", "p99 latency of each evaluation") : null;
  const sampled = timed.map((i) => [runs[i]?.latencySample, i]).filter(([s]) => s?.totalCount);
  const cardEl = h("section", { class: "card chart-card", "aria-labelledby": "compare-charts-title" },
    h("h2", { id: "compare-charts-title" }, "Charts"),
    cdf ? h("figure", {}, cdf, h("figcaption", {}, "Latency CDFs, overlaid (line style and colour per evaluation)")) : null,
    cdf
      ? h("p", { class: "small muted" },
        sampled.some(([s]) => s.downsampled)
          ? `Curves with more than ${POINTS_PER_CURVE} samples are drawn from ${POINTS_PER_CURVE} evenly spaced order statistics; the points lie exactly on the full CDF.`
          : "Every sample of every run is drawn.")
      : null,
    offlineNote,
    h("div", { class: "chart-pair" },
      h("figure", {}, throughput, h("figcaption", {}, "Throughput (samples/s) with its 95 % interval, verdicts on the bars")),
      p99 ? h("figure", {}, p99, h("figcaption", {}, "p99 latency (ms) with its 95 % interval, verdicts on the bars")) : null));
  if (cdf) plot(cdf, sampled.map(([sample, i]) => cdfTrace(sample, labels[i], i)), { ...CDF_AXES, showlegend: true, height: 340 });
  const bars = (name, which) => {
    const y = which.map((i) => metric(runs[i], name)?.value ?? null);
    return {
      type: "bar",
      // Short ids on the axis (the tables above and the CDF's legend spell out the rest).
      x: which.map((i) => shortId(evaluations[i].id)),
      customdata: which.map((i) => labels[i]),
      y,
      error_y: errorBars(which.map((i) => runs[i]), name, y),
      text: which.map((i) => verdictText(runs[i])),
      textposition: "inside",
      insidetextanchor: "start",
      marker: {
        color: which.map((i) => SERIES[i % SERIES.length]),
        pattern: { shape: which.map((i) => (quotable(runs[i]) ? "" : "/")), fillmode: "overlay", fgcolor: "#ffffff", solidity: 0.3 },
      },
      hovertemplate: "%{customdata}: %{y:.3f} (%{text})<extra></extra>",
    };
  };
  const barLayout = (title) => ({ xaxis: { type: "category" }, yaxis: { title: { text: title }, rangemode: "tozero" }, margin: { l: 60, r: 16, t: 12, b: 40 } });
  plot(throughput, [bars("samples_per_second", evaluations.map((e, i) => i))], barLayout("Samples/s"));
  if (p99) plot(p99, [bars("latency_p99", timed)], barLayout("p99 latency (ms)"));
  return cardEl;
}

// A training run's images/s interval as a verdict may use it: none when its host was busy
// or another measurement overlapped it, whatever was computed.
function trainingIntervalOf(run) {
  const t = run?.training;
  if (!t) return { low: null, high: null, reason: "no training run" };
  if (t.host?.busy) return { low: null, high: null, reason: "BUSY: other processes kept its host busy" };
  if (t.host?.overlapped) return { low: null, high: null, reason: "another measurement overlapped it" };
  const s = t.statistics;
  return { low: s.low, high: s.high, reason: s.intervalReason };
}

const TRAINING_FIGURES = [
  ["images_per_second", "Images/s", (s) => number(s.imagesPerSecond, 1), (s) => imagesInterval(s) ?? `no interval${s.intervalReason ? `: ${s.intervalReason}` : ""}`],
  ["jitter", "Jitter (images/s)", (s) => number(s.jitter, 2), () => null],
  ["mean_step", "Mean step (ms)", (s) => number(s.meanStepMs, 2), (s) => `median ${number(s.medianStepMs, 2)} ms`],
  ["data_share", "Data share (%)", (s) => (s.dataShare === null || s.dataShare === undefined ? DASH : number(s.dataShare * 100, 2)), () => null],
  ["steps", "Measured steps", (s) => number(s.steps, 0), () => null],
];

function trainingFiguresCard(evaluations, labels) {
  const runs = evaluations.map(latestRun);
  const versus = runs.slice(1).map((run, i) => [run, labels[i + 1]]);
  const verdict = beyondCell(versus, (run) => differVerdict(trainingIntervalOf(runs[0]), trainingIntervalOf(run)), true);
  const row = ([name, label, value, below]) =>
    h("tr", { "data-metric": name },
      h("th", { scope: "row" }, label),
      runs.map((run) => {
        const s = run?.training?.statistics;
        if (!s) return h("td", { class: "num" }, DASH);
        const under = below(s);
        return h("td", { class: "num" }, value(s),
          under ? h("div", { class: "small muted", "data-interval": name === "images_per_second" && imagesInterval(s) ? "yes" : "no" }, under) : null);
      }),
      name === "images_per_second" ? verdict : blank());
  return h("section", { class: "card", "aria-labelledby": "training-figures-title" },
    ...figuresTable("training-figures-title", "Training figures", "training-figures", evaluations, labels,
      h("tr", { "data-verdict": "host" }, h("th", { scope: "row" }, "Host"),
        runs.map((run) => h("td", {}, run?.training ? hostBadge(run.training) : DASH)), blank()),
      TRAINING_FIGURES.map(row)),
    h("p", { class: "small muted" },
      "Images/s = batch / mean step time; under it its 95 % interval (images/s ± t × its delta-method standard error). ",
      "“differ” means the two intervals do not overlap; a BUSY or overlapped run gets no verdict. Hover a verdict for why."));
}

function trainingChartsCard(evaluations, labels) {
  const runs = evaluations.map(latestRun);
  const box = chartBox("compare-images", "Images/s of each training evaluation, with 95 % intervals");
  const cardEl = h("section", { class: "card chart-card", "aria-labelledby": "compare-training-title" },
    h("h2", { id: "compare-training-title" }, "Training throughput"),
    h("figure", {}, box, h("figcaption", {}, "Images/s with its 95 % interval (error bars); hatched: the host was busy")));
  const stats = runs.map((run) => run?.training?.statistics);
  plot(box, [{
    type: "bar",
    x: evaluations.map((e) => shortId(e.id)),
    customdata: labels,
    y: stats.map((s) => s?.imagesPerSecond ?? null),
    error_y: {
      type: "data", symmetric: false, visible: true,
      array: stats.map((s) => (s && s.high !== null && s.high !== undefined ? s.high - s.imagesPerSecond : 0)),
      arrayminus: stats.map((s) => (s && s.low !== null && s.low !== undefined ? s.imagesPerSecond - s.low : 0)),
    },
    marker: {
      color: evaluations.map((e, i) => SERIES[i % SERIES.length]),
      pattern: { shape: runs.map((run) => (run?.training?.host?.busy ? "/" : "")), fillmode: "overlay", fgcolor: "#ffffff", solidity: 0.3 },
    },
    hovertemplate: "%{customdata}: %{y:.1f} images/s<extra></extra>",
  }], { xaxis: { type: "category" }, yaxis: { title: { text: "Images/s" }, rangemode: "tozero" }, margin: { l: 60, r: 16, t: 12, b: 40 } });
  return cardEl;
}
