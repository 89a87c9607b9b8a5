// The training workload's section of the run page (Workload.web_view): what it trained
// with (not a LoadGen scenario), images/s with its 95 % interval beside the host's state
// (BUSY when other processes kept its CPUs busy), and charts of the per-step times (mean
// and median marked) and of the progress lines' images/s and loss. No validity windows or
// latency charts: its steps are timed, not judged by LoadGen.

import { gql } from "/static/js/api.js";
import { SERIES, chartBox, plot } from "/static/js/charts.js";
import { h, replace } from "/static/js/dom.js";
import { DASH, bytes, number, when } from "/static/js/format.js";
import { LOG_LINES, STEP_POINTS, TRAINING_CHARTS } from "/static/js/queries.js";
import { hostBadge, imagesInterval, trainingSettings } from "/static/js/views/training.js";
import { notice, verdictBadge } from "/static/js/widgets.js";

export function sections(evaluation, run, page) {
  const shown = [trainingOverview(evaluation, run)];
  if (run?.training) {
    shown.push(trainingHeadline(run), ...trainingChartCards(evaluation, run, page.signal));
    shown.push(page.environment(run), page.metricsTable(run), page.logs(run));
  }
  return shown;
}

function card(title, id, ...children) {
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

function definitions(pairs) {
  return h("dl", { class: "pairs" },
    pairs.filter(([, v]) => v !== undefined).map(([k, v, key]) =>
      [h("dt", {}, k), h("dd", key ? { "data-setting": key } : {}, v ?? DASH)]));
}

function trainingOverview(e, run) {
  const scaling = e.groupKind === "training-scaling" && e.groupId
    ? h("a", { href: `#/training-scaling/${encodeURIComponent(e.groupId)}` }, "speedup and E(N) across world sizes")
    : undefined;
  return card("Training evaluation", "overview-title", definitions([
    ["Model", `${e.modelName} ${e.modelVersion}`],
    ["Framework", `${e.framework} on ${e.device}`],
    ["Measurement", "training steps timed (warm-up excluded), synthetic tensors"],
    ...trainingSettings(e, run),
    ["Scaling", scaling],
    ["Agent", e.agentId ?? DASH],
    ["Submitted", when(e.createdAt)],
    ["Finished", when(e.finishedAt)],
    ["Id", h("code", {}, e.id)],
  ]));
}

function figure(name, label, value, unit, below) {
  return h("div", { class: "figure", "data-metric": name },
    h("div", { class: "figure-label" }, label),
    h("div", { class: "figure-value" }, value, unit ? h("span", { class: "unit" }, ` ${unit}`) : null),
    below ?? null);
}

function trainingHeadline(run) {
  const t = run.training;
  const s = t?.statistics ?? {};
  const shown = imagesInterval(s);
  const title = h("span", {}, "Headline ", verdictBadge(run.validity, "training runs are measured, not judged by LoadGen"), " ", hostBadge(t));
  return card(title, "headline-title",
    h("div", { class: "figures" },
      figure("images_per_second", "Images/s", number(s.imagesPerSecond, 1), null,
        h("div", { class: "figure-interval", "data-interval": shown ? "yes" : "no", title: s.intervalReason || s.intervalMethod || null },
          shown ? `95 % ${shown}` : `no 95 % interval${s.intervalReason ? `: ${s.intervalReason}` : ""}`)),
      figure("standard_error", "± standard error", number(s.standardError, 2), "images/s"),
      figure("jitter", "Jitter", number(s.jitter, 2), "images/s"),
      figure("mean_step", "Mean step", number(s.meanStepMs, 2), "ms",
        h("div", { class: "figure-interval" }, `median ${number(s.medianStepMs, 2)} ms`)),
      figure("data_share", "Data share", s.dataShare === null || s.dataShare === undefined ? DASH : number(s.dataShare * 100, 2), "%"),
      figure("steps", "Measured steps", number(s.steps, 0), null,
        h("div", { class: "figure-interval" }, `${number(s.totalImages, 0)} images in ${number(s.totalS, 2)} s`))),
    h("p", { class: "small muted", "data-role": "interval-basis" },
      "Images/s = batch / mean step time (total images over total time, as tf_cnn_benchmarks computes it), ",
      `its 95 % interval: ${s.intervalMethod ?? DASH}. Jitter: 1.4826 × the MAD of per-step images/s.`),
    t?.host?.busy
      ? h("p", { class: "notice error", role: "status" }, `BUSY: other processes kept the host's CPUs busy while it measured (${t.host.busyReason || "see the host's load"}); this figure is not one to quote.`)
      : null,
    t ? h("p", { class: "small muted" },
      `Peak memory: ${bytes(t.peakRssBytes)}${t.cudaMaxAllocatedBytes ? ` (GPU: ${bytes(t.cudaMaxAllocatedBytes)})` : ""}${t.workers ? `; one rank of ${t.workers} data-parallel workers` : ""}.`) : null);
}

function chartCard(title, id, ...children) {
  return h("section", { class: "card chart-card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

// The step-time and loss cards, empty at first; they fill in once the data has loaded.
function trainingChartCards(evaluation, run, signal) {
  const steps = chartCard("Step times", "step-times-title", notice("Loading the run's step times…"));
  const loss = chartCard("Progress lines", "loss-title", notice("Loading the run's progress lines…"));
  loadCharts(evaluation.id, run.id, signal, steps, loss);
  return [steps, loss];
}

function fill(cardEl, ...children) {
  replace(cardEl, cardEl.querySelector("h2"), ...children);
}

async function loadCharts(evaluationId, runId, signal, steps, loss) {
  let data;
  try {
    data = await gql(TRAINING_CHARTS, { id: evaluationId, points: STEP_POINTS, lines: LOG_LINES });
  } catch (err) {
    if (!signal.aborted) for (const slot of [steps, loss]) fill(slot, notice(err.message, "error"));
    return;
  }
  if (signal.aborted) return;
  const training = data.evaluation?.runs?.find((r) => r.id === runId)?.training;
  drawSteps(steps, training);
  drawLoss(loss, training?.log ?? []);
}

function drawSteps(cardEl, training) {
  const times = training?.stepTimes;
  if (!times || !times.totalCount) {
    fill(cardEl, notice("This run stored no step times.", "info"));
    return;
  }
  const box = chartBox("training-steps", `Time of ${times.steps.length} of ${times.totalCount} measured steps`);
  fill(cardEl, box,
    h("p", { class: "small muted", "data-sampling": times.downsampled ? "downsampled" : "all" },
      `Drawn from ${times.method}; each step from fetching its batch to the finished optimizer step. `,
      "The dashed line is the mean step time (images/s = batch / mean), the dotted one the median."));
  const ms = times.seconds.map((s) => s * 1000);
  const first = times.steps[0];
  const last = times.steps[times.steps.length - 1];
  const level = (value, name, dash, color) => ({
    type: "scatter", mode: "lines", name, x: [first, last], y: [value, value],
    line: { color, dash, width: 2 }, hovertemplate: `${name}: %{y:.2f} ms<extra></extra>`,
  });
  const traces = [{
    type: "scatter", mode: times.steps.length > 200 ? "lines" : "lines+markers", name: "Step time",
    x: times.steps, y: ms, line: { color: SERIES[0], width: 1.5 },
    hovertemplate: "step %{x}: %{y:.2f} ms<extra></extra>",
  }];
  const stats = training.statistics ?? {};
  if (stats.meanStepMs !== null && stats.meanStepMs !== undefined) traces.push(level(stats.meanStepMs, "Mean", "dash", SERIES[1]));
  if (stats.medianStepMs !== null && stats.medianStepMs !== undefined) traces.push(level(stats.medianStepMs, "Median", "dot", SERIES[2]));
  plot(box, traces, {
    showlegend: true,
    xaxis: { title: { text: "Measured step" } },
    yaxis: { title: { text: "Step time (ms)" }, rangemode: "tozero" },
  }).then(() => {
    // Only the per-step line counts as what the chart shows of the run's data.
    box.dataset.points = String(times.steps.length);
  });
}

function drawLoss(cardEl, log) {
  if (!log.length) {
    fill(cardEl, notice("No progress lines: the run logged none (display_every 0, or fewer steps than it).", "info"));
    return;
  }
  const withLoss = log.filter((l) => l.loss !== null && l.loss !== undefined);
  const box = chartBox("training-loss", `Loss and images/s at ${log.length} progress lines`);
  fill(cardEl, box,
    h("p", { class: "small muted" },
      "Each line: images/s over the measured steps so far (± its standard error) and, where read, that step's loss."));
  const traces = [{
    type: "scatter", mode: "lines+markers", name: "Images/s so far",
    x: log.map((l) => l.step), y: log.map((l) => l.imagesPerSecond),
    error_y: { type: "data", array: log.map((l) => l.standardError ?? 0), visible: true, color: SERIES[0] },
    line: { color: SERIES[0] }, hovertemplate: "step %{x}: %{y:.1f} images/s<extra></extra>",
  }];
  if (withLoss.length) {
    traces.push({
      type: "scatter", mode: "lines+markers", name: "Loss", yaxis: "y2",
      x: withLoss.map((l) => l.step), y: withLoss.map((l) => l.loss),
      line: { color: SERIES[1], dash: "dash" }, hovertemplate: "step %{x}: loss %{y:.4f}<extra></extra>",
    });
  }
  plot(box, traces, {
    showlegend: true,
    xaxis: { title: { text: "Measured step" } },
    yaxis: { title: { text: "Images/s" }, rangemode: "tozero" },
    ...(withLoss.length ? { yaxis2: { title: { text: "Loss" }, overlaying: "y", side: "right", showgrid: false, rangemode: "tozero" } } : {}),
    margin: { l: 60, r: 60, t: 36, b: 48 },
  });
}
