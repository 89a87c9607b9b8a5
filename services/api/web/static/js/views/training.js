// What the pages that line training evaluations up (compare) share with the training
// workload's own run-page section (services/workloads/training/web/view.js): whether an
// evaluation trained, the settings it states, BUSY or HOST QUIET, images/s' interval.

import { h } from "../dom.js";
import { DASH, number } from "../format.js";
import { verdictBadge } from "../widgets.js";

export function isTraining(evaluation, run) {
  return evaluation?.workload === "training" || Boolean(run?.training);
}

// The settings a training run states, or, before it has a run, what was submitted.
export function trainingSettings(evaluation, run) {
  if (run?.training) return run.training.settings.map((s) => [s.label, s.value, s.key]);
  const options = evaluation.workloadOptions ?? {};
  return [
    ["Image size (px)", options.image_size, "image_size"],
    ["Batch size", evaluation.batchSize, "batch_size"],
    ["Steps (measured)", options.steps, "steps"],
    ["Warm-up steps", options.warmup, "warmup"],
    ["Optimizer", options.optimizer, "optimizer"],
    ["Precision", options.precision, "precision"],
  ].map(([k, v, key]) => [k, v === undefined || v === null ? DASH : String(v), key]);
}

// "BUSY" when other processes kept the host's CPUs busy during the measurement.
export function hostBadge(training) {
  const host = training?.host;
  if (!host || host.busy === null || host.busy === undefined) return verdictBadge("HOST UNKNOWN", "host");
  const badge = h("span", { class: `badge tone-${host.busy ? "bad" : "good"}`, title: host.busyReason || "host load", "data-host": host.busy ? "busy" : "quiet" },
    host.busy ? "BUSY" : "HOST QUIET");
  return host.overlapped ? [badge, " ", h("span", { class: "badge tone-bad", title: "another measurement ran on this host" }, "OVERLAPPED")] : badge;
}

export function imagesInterval(statistics, digits = 1) {
  if (!statistics || statistics.low === null || statistics.low === undefined) return null;
  return `[${number(statistics.low, digits)}, ${number(statistics.high, digits)}]`;
}

