// One evaluation: live state over the evaluationUpdates subscription, then its results.

import { ApiError, fetchBlob, gql, subscribe } from "../api.js";
import { h, replace } from "../dom.js";
import {
  DASH, bytes, groupPage, inFormWords, isFinal, latestRun, number, scenarioName, shortId, stability, when,
} from "../format.js";
import { busyBadge, busyOf, figureInterval, shownFigure } from "../figures.js";
import { CANCEL, EVALUATION, EVALUATION_UPDATES } from "../queries.js";
import { backToList, groupCancelButton, notice, openView, stateBadge, verdictBadge } from "../widgets.js";
import { runChartCards } from "./run_charts.js";
import { workloadView } from "../workload_views.js";

const HEADLINE = [
  ["samples_per_second", "Samples/s", 1],
  ["latency_p50", "p50 latency", 3],
  ["latency_p90", "p90 latency", 3],
  ["latency_p99", "p99 latency", 3],
];

export function renderDetail(main, signal, id) {
  // Filled once the evaluation is read: the page of the group it belongs to, if any.
  const group = h("span", { "data-member-of": "" });
  const { heading, signedIn } = openView(main, `Evaluation ${shortId(id)}`, backToList(group));
  if (!signedIn) return heading;
  const live = h("section", { class: "card live", "aria-labelledby": "live-title" });
  const results = h("div", { class: "results" });
  main.append(live, results);

  let stop = () => {};
  signal.addEventListener("abort", () => stop());

  const view = { id, live, results, signal, evaluation: null, follow, refresh };

  async function refresh() {
    try {
      const data = await gql(EVALUATION, { id });
      if (signal.aborted) return;
      if (!data.evaluation) {
        replace(live, notice(`No evaluation ${id} is visible to you.`, "error"));
        return;
      }
      view.evaluation = data.evaluation;
      if (data.evaluation.groupId && !group.childElementCount) {
        const { href, label } = groupPage(data.evaluation.groupId, data.evaluation.groupKind);
        group.append(" · part of a group: ", h("a", { href, "data-group-link": data.evaluation.groupKind ?? "fan-out" }, label),
          " ", groupCancelButton(data.evaluation.groupId, () => refresh()));
      }
      heading.textContent = `${data.evaluation.modelName} ${data.evaluation.modelVersion} · ${shortId(id)}`;
      renderLive(view, data.evaluation, "");
      await renderResults(view, data.evaluation);
    } catch (err) {
      if (!signal.aborted) replace(live, notice(err.message, "error"));
    }
  }

  function follow() {
    stop();
    stop = subscribe(EVALUATION_UPDATES, { id }, {
      next: (data) => {
        const update = data.evaluationUpdates;
        if (!update) {
          replace(live, notice(`No evaluation ${id} is visible to you.`, "error"));
          return;
        }
        view.evaluation = { ...view.evaluation, ...update };
        renderLive(view, view.evaluation, "Following live updates…");
      },
      // The stream ends when the evaluation does: read its results once, in full.
      complete: () => refresh(),
      error: (err) => renderLive(view, view.evaluation, `${err.message} Reload the page to try again.`),
    });
  }

  refresh().then(() => {
    if (!signal.aborted && view.evaluation && !isFinal(view.evaluation.state)) follow();
  });
  return heading;
}

function renderLive(view, evaluation, message) {
  const done = isFinal(evaluation.state);
  const cancel = h("button", { type: "button", class: "danger", disabled: done }, "Cancel evaluation");
  const cancelError = h("p", { class: "field-error", role: "alert", hidden: true });
  cancel.addEventListener("click", () => cancelEvaluation(view, cancel, cancelError));
  const total = evaluation.shardsTotal ?? 0;
  const ready = evaluation.shardsReady ?? 0;
  replace(view.live,
    h("h2", { id: "live-title" }, "Status"),
    h("div", { class: "status-line" },
      h("span", { class: "status-state", "data-state": evaluation.state, role: "status", "aria-live": "polite" },
        "State: ", stateBadge(evaluation.state)),
      h("div", { class: "status-actions" }, cancel)),
    cancelError,
    total
      ? h("div", { class: "progress" },
          h("label", { for: "shards" }, `Preprocessed shards: ${ready} of ${total}${evaluation.preprocessReused ? " (reused)" : ""}`),
          h("progress", { id: "shards", max: total, value: ready }, `${ready} of ${total}`))
      : null,
    evaluation.reason ? h("p", { class: `reason ${evaluation.state === "FAILED" ? "error" : ""}` }, h("strong", {}, "Reason: "), evaluation.reason) : null,
    message ? h("p", { class: "muted small" }, message) : null);
}

async function cancelEvaluation(view, button, errorSlot) {
  button.disabled = true;
  errorSlot.hidden = true;
  try {
    const result = (await gql(CANCEL, { id: view.id })).cancelEvaluation;
    if (result.__typename !== "Evaluation") {
      replace(errorSlot, h("strong", {}, `${result.__typename} (${result.field}): `), result.message);
      errorSlot.hidden = false;
    }
    // Read it afresh at once, rather than only when the subscription next polls.
    if (!view.signal.aborted) await view.refresh();
  } catch (err) {
    replace(errorSlot, err.message);
    errorSlot.hidden = false;
    button.disabled = false;
  }
}

async function renderResults(view, evaluation) {
  const run = latestRun(evaluation);
  // A workload with a section of its own (Workload.web_view) draws it; else LoadGen's.
  let own = null;
  try {
    own = await workloadView(evaluation.workload);
  } catch (err) {
    if (!view.signal.aborted) replace(view.results, notice(`This workload's section did not load: ${err.message}`, "error"));
    return;
  }
  if (view.signal.aborted) return;
  const page = { h, card, definitions, environment, metricsTable, logs, notice, signal: view.signal };
  const sections = own ? own.sections(evaluation, run, page) : loadgenSections(view, evaluation, run);
  if (!run && isFinal(evaluation.state)) sections.push(notice("This evaluation finished without a run.", "info"));
  replace(view.results, sections);
}

function loadgenSections(view, evaluation, run) {
  const sections = [overview(evaluation)];
  // Two columns below the headline: verdicts beside the environment, then the details.
  if (run) {
    sections.push(headline(run), ...runChartCards(evaluation, run, view.signal));
    sections.push(validity(run), environment(run), metricsTable(run), logs(run));
  }
  return sections;
}

function card(title, id, ...children) {
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

function definitions(pairs) {
  return h("dl", { class: "pairs" },
    pairs.filter(([, v]) => v !== undefined).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v ?? DASH)]));
}

function overview(e) {
  const scenario = typeof e.scenario === "object" && e.scenario ? e.scenario : {};
  const settings = Object.entries(scenario)
    .filter(([k, v]) => k !== "scenario" && v !== null && v !== undefined && typeof v !== "object")
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
  return card("Evaluation", "overview-title", definitions([
    ["Model", `${e.modelName} ${e.modelVersion}`],
    ["Framework", `${e.framework} on ${e.device}`],
    ["Scenario", scenarioName(e.scenario)],
    ["Scenario settings", settings || DASH],
    ["Batch size", String(e.batchSize)],
    ["Threads", e.threads ? `${e.threads} (asked)` : "the agent's setting or its choice"],
    ["Dataset", `${e.dataset}${e.samples ? `, ${e.samples} samples` : ""}`],
    ["Preprocessing", e.preprocessing],
    ["Agent", e.agentId ?? DASH],
    ["Submitted", when(e.createdAt)],
    ["Finished", when(e.finishedAt)],
    ["Id", h("code", {}, e.id)],
  ]));
}

function headline(run) {
  // The verdicts sit in the title itself: a figure is never shown without them, and a
  // busy host is one of them (BUSY, with how busy beside it).
  const { busy, note } = busyOf(run);
  const title = h("span", {}, "Headline ",
    verdictBadge(run.validity, "LoadGen validity"), " ", verdictBadge(stability(run) ?? "STABILITY UNKNOWN", "stability"),
    busy ? [" ", busyBadge(run)] : null);
  const missing = [];
  const offline = (run.scenario ?? "").toLowerCase() === "offline";
  // Only the figures the one rule gives (Run.shownFigures): an Offline run has no latency tile.
  const figures = HEADLINE.filter(([name]) => !(offline && name.startsWith("latency"))).map(([name, label, digits]) => {
    const figure = shownFigure(run, name);
    const shown = figureInterval(figure, digits);
    if (figure && !shown && figure.intervalNote) missing.push(`${label}: ${inFormWords(figure.intervalNote)}`);
    return h("div", { class: "figure", "data-metric": name },
      h("div", { class: "figure-label" }, label),
      h("div", { class: "figure-value" }, number(figure?.value, digits), figure && figure.unit !== "samples/s" ? h("span", { class: "unit" }, ` ${figure.unit}`) : null),
      figure ? h("div", { class: "figure-interval", "data-interval": shown ? "yes" : "no", title: shown ? null : figure.intervalNote || null },
        shown ? `95 % ${shown}` : "no 95 % interval") : null,
      figure?.busy ? h("div", { class: "figure-busy" }, busyBadge(figure)) : null);
  });
  const confidence = run.confidence;
  return card(title, "headline-title",
    h("div", { class: "figures" }, figures),
    h("p", { class: "small muted" }, "Shown with LoadGen's validity and the run's stability below; an INVALID or UNSTABLE figure is not a result to quote."),
    busy ? h("p", { class: "small", "data-role": "host-busy" }, `BUSY: the host was busy while it measured (${note}); rerun on an idle host before quoting these figures.`) : null,
    offline ? h("p", { class: "small muted", "data-role": "offline-latency" }, "Offline issues every sample at once: its latencies are queue positions, not figures, and are not shown.") : null,
    confidence
      ? h("p", { class: "small muted", "data-role": "interval-basis" },
        `95 % intervals: a bootstrap over the run's ${confidence.units} ${confidence.basis}; latencies on the SUT's clock.`,
        missing.length ? h("ul", { class: "interval-reasons" }, missing.map((why) => h("li", {}, why))) : null)
      : h("p", { class: "small muted" }, "No 95 % intervals: this run was stored without them (an accuracy run, or one from before they were computed)."));
}

function validity(run) {
  const v = run.report?.performance?.validity ?? {};
  const reasons = v.reasons ?? [];
  const check = (met) => (met === null || met === undefined ? DASH : met ? "met" : "not met");
  return card("Validity and stability", "validity-title",
    definitions([
      ["LoadGen validity", verdictBadge(run.validity, "LoadGen validity")],
      ["Stability", verdictBadge(stability(run), "stability")],
      ["Minimum duration", check(v.min_duration_met)],
      ["Minimum queries", check(v.min_queries_met)],
      ["Early stopping", check(v.early_stopping_met)],
    ]),
    reasons.length
      ? h("div", {}, h("h3", {}, "Why it is INVALID"), h("ul", { class: "reasons" }, reasons.map((r) => h("li", {}, inFormWords(r)))))
      : null);
}

function metricsTable(run) {
  // Offline's latencies are queue positions, not figures: left out here as everywhere.
  const offline = (run.scenario ?? "").toLowerCase() === "offline";
  const metrics = run.metrics.filter((m) => !(offline && m.name.startsWith("latency_")));
  return card("All metrics", "metrics-title",
    offline ? h("p", { class: "small muted" }, "Offline: latencies are queue positions, not shown.") : null,
    h("div", { class: "table-wrap" },
      h("table", { class: "metrics" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Metric"), h("th", { scope: "col" }, "Value"), h("th", { scope: "col" }, "Unit"))),
        h("tbody", {}, metrics.map((m) =>
          h("tr", {}, h("th", { scope: "row" }, m.name), h("td", { class: "num" }, number(m.value, 4)), h("td", {}, m.unit)))))));
}

function environment(run) {
  const env = run.environment ?? {};
  const cpu = env.cpu ?? {};
  const gpus = (env.gpus ?? []).map((g) => g.name ?? JSON.stringify(g)).join(", ");
  const frameworks = Object.entries(env.frameworks ?? {}).map(([k, v]) => `${k} ${v}`).join(", ");
  return card("Environment", "environment-title", definitions([
    ["Host", env.hostname],
    ["OS", env.os],
    ["CPU", cpu.model ? `${cpu.model} (${cpu.physical_cores ?? "?"} cores, ${cpu.logical_cores ?? "?"} threads)` : undefined],
    ["Memory", bytes(env.memory_bytes)],
    ["GPUs", gpus || "none"],
    ["Python", env.python],
    ["Framework", `${run.report?.framework?.name ?? run.framework ?? DASH} ${run.frameworkVersion ?? ""}`.trim()],
    ["Key packages", frameworks || DASH],
    ["benchstack", env.benchstack],
  ]));
}

function logs(run) {
  if (!run.logs?.length) return card("Logs", "logs-title", h("p", { class: "muted" }, "No logs stored."));
  const status = h("p", { class: "small muted", role: "status" });
  return card("Logs", "logs-title",
    h("ul", { class: "logs" }, run.logs.map((log) =>
      h("li", {}, h("a", {
        href: log.url,
        // A plain link cannot carry the token: fetch it, then open what came back.
        onclick: (event) => openLog(event, log, status),
      }, log.name)))),
    status);
}

async function openLog(event, log, status) {
  event.preventDefault();
  status.textContent = `Opening ${log.name}…`;
  try {
    const blob = await fetchBlob(log.url);
    const url = URL.createObjectURL(new Blob([blob], { type: "text/plain" }));
    window.open(url, "_blank", "noopener");
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    status.textContent = "";
  } catch (err) {
    status.textContent = err instanceof ApiError ? err.message : String(err);
  }
}
