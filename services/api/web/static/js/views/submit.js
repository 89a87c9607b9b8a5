// The submit form: every workflow the API offers (the "Workflow" select picks the
// mutation): one evaluation (or a fan-out), a sweep, a find-peak search, repeats, MLPerf's
// accuracy + performance pair, a bricks or a training evaluation, a training scaling, and
// registering a model's manifest. The server is the judge of input (the form does not
// block on HTML validation), and its typed errors are shown next to the field they name.

import { gql } from "../api.js";
import { field, h, replace } from "../dom.js";
import { groupPage } from "../format.js";
import {
  FORM_CHOICES, REGISTER_MODEL, SUBMIT, SUBMIT_FIND_PEAK, SUBMIT_PAIR, SUBMIT_REPEATS, SUBMIT_SWEEP,
  SUBMIT_TRAINING_SCALING,
} from "../queries.js";
import { notice, openView } from "../widgets.js";

const SCENARIOS = ["offline", "single-stream", "multi-stream", "server"];

// The API names fields as the GraphQL input does; map them onto this form's controls.
const FIELD_OF = {
  model: "model",
  version: "model",
  framework: "framework",
  frameworkVersion: "framework",
  device: "device",
  scenario: "scenario",
  batchSize: "batchSize",
  dataset: "dataset",
  samples: "samples",
  seed: "seed",
  threads: "threads",
  traceLevel: "traceLevel",
  preprocessing: "preprocessing",
  fanOut: "fanOut",
  backendOptions: "backendOptions",
  constraints: "constraints",
  "settings.min_duration_s": "duration",
  "settings.target_qps": "targetQps",
  "settings.target_latency_ms": "targetLatencyMs",
  "settings.latency_percentile": "latencyPercentile",
  "settings.samples_per_query": "samplesPerQuery",
  // An unmet agent term is named by its key (services/core/constraints.py).
  arch: "constraints",
  gpu: "constraints",
  host: "constraints",
  hostname: "constraints",
  memory: "constraints",
  threads: "constraints",
  cores: "constraints",
  agent: "constraints",
  // The workflows' own fields; "evaluation" is what a workflow refuses of the evaluation.
  evaluation: "workflow",
  parameter: "sweepParameter",
  values: "sweepValues",
  latencyBoundMs: "latencyBoundMs",
  percentile: "percentile",
  startQps: "startQps",
  tolerance: "tolerance",
  maxProbes: "maxProbes",
  count: "count",
  worldSizes: "worldSizes",
  // A workload's own refusal ("bricks: torch models only") is about the workflow chosen.
  bricks: "workflow",
  training: "workflow",
  "bricks.granularity": "bricksGranularity",
  "bricks.image_size": "bricksImageSize",
  "bricks.queries": "bricksQueries",
  "bricks.min_duration_s": "bricksMinDurationS",
  "training.steps": "trainingSteps",
  "training.warmup": "trainingWarmup",
  "training.image_size": "trainingImageSize",
  "training.precision": "trainingPrecision",
  "training.optimizer": "trainingOptimizer",
};
// Fields named with a key or an index after them: backendOptions.service_time_ms,
// constraints.require[1].
const PREFIXES = [["backendOptions.", "backendOptions"], ["constraints.", "constraints"]];

function controlName(apiField, workflow) {
  if (!apiField) return null;
  // registerModel names the manifest's own fields (name, version): all in the one text.
  if (workflow === "register") return "manifest";
  if (FIELD_OF[apiField]) return FIELD_OF[apiField];
  const prefix = PREFIXES.find(([p]) => apiField.startsWith(p));
  return prefix ? prefix[1] : null;
}

const WORKFLOWS = [
  ["one", "one evaluation", "Submit evaluation",
    "One evaluation on one agent (or, with fan-out, one on each matching agent)."],
  ["sweep", "sweep", "Submit sweep",
    "One evaluation per value, run on one agent with the model loaded once; the curve draws as they finish."],
  ["find-peak", "find peak", "Start find peak",
    "Server runs, one evaluation per probe on one agent, doubling or halving the rate and then bisecting, " +
    "until the highest QPS whose latency percentile stays within the bound is found. " +
    "The search sets each probe's scenario, target QPS and latency settings."],
  ["repeats", "repeats", "Submit repeats",
    "The same evaluation several times, for each figure's run-to-run spread and its 95 % interval over the runs."],
  ["pair", "accuracy + performance pair", "Submit pair",
    "MLPerf's two passes of one evaluation on one agent, as `benchstack bench --submission` runs them: " +
    "accuracy mode (top-1, top-5) and performance mode, compared side by side."],
  ["bricks", "bricks (DLBricks)", "Submit bricks",
    "The agent cuts the model into bricks of at most Granularity layers, measures those its system has no " +
    "figure for and constructs the model's latency from them (torch models; no dataset)."],
  ["training", "training", "Submit training",
    "The agent times training steps of the model (torch, synthetic tensors at the batch size), as `benchstack train` does."],
  ["training-scaling", "training scaling", "Submit training scaling",
    "Data-parallel training (DDP) across agents: for each world size N, N ranks on N agents train together; " +
    "speedup and efficiency per N."],
  ["register", "register a model", "Register model",
    "Store a model's manifest (YAML) under its name and version, with the checks `benchstack manifest validate` " +
    "makes; it is then offered under Model."],
];
// Which workflows show which parts of the form.
const LOADGEN = "one sweep find-peak repeats pair";
const TRAINING = "training training-scaling";
const RUNS = `${LOADGEN} bricks ${TRAINING}`;
// services/workloads/training/options.py's PRECISIONS and OPTIMIZERS.
const PRECISIONS = ["fp32", "bf16"];
const OPTIMIZERS = ["sgd", "adam"];
// What a sweep may vary, as submitSweep names it (target QPS needs the server scenario).
const SWEEPABLE = [["batch_size", "batch size"], ["target_qps", "target QPS (server)"]];
// The percentiles LoadGen reports, which a find-peak bound may apply to.
const PERCENTILES = ["50", "90", "95", "97", "99", "99.9"];
// Queries a find-peak probe needs before LoadGen's early stopping (with one query over the
// bound) and the stability rule's 500 samples can judge it, per percentile: the Python
// side's services/core/early_stopping.probe_queries (a test holds the two equal), times
// its margin for Poisson arrivals.
const PROBE_QUERIES = { 50: 500, 90: 500, 95: 500, 97: 500, 99: 662, 99.9: 6636 };
const DURATION_MARGIN = 1.25;

// What to say before a find-peak whose probes are too short to be judged at the start
// rate; "" when they are long enough or the rate is not known yet.
export function durationWarning(durationS, startQps, percentile) {
  const queries = PROBE_QUERIES[percentile];
  if (!(durationS > 0) || !(startQps > 0) || !queries) return "";
  const needed = (DURATION_MARGIN * queries) / startQps;
  if (durationS >= needed) return "";
  return `Probes of ${durationS} s at ${startQps} QPS hold about ${Math.round(durationS * startQps)} queries; ` +
    `LoadGen's early stopping at p${percentile} needs ${queries}, so they would not be judged: ` +
    `${Math.ceil(needed)} s or more, or leave Duration empty to size each probe from its rate.`;
}
// shared/tracing.py's TRACE_LEVELS (APPLICATION, an alias of MODEL, left out).
// Input.fidelity; "" sends nothing: the model's manifest decides.
const PREPROCESSING = [
  ["", "the model's own"],
  ["reference", "reference: torchvision's bits"],
  ["fast", "fast: at most one level off"],
];

const TRACE_LEVELS = [
  ["NONE", "NONE: LoadGen only"],
  ["MODEL", "MODEL: + steps"],
  ["FRAMEWORK", "FRAMEWORK: + layers"],
  ["LIBRARY", "LIBRARY: + kernels"],
  ["SYSTEM", "SYSTEM: + CPU, memory"],
  ["FULL", "FULL: all of them"],
];

export function renderSubmit(main, signal) {
  const { heading, signedIn } = openView(main, "New evaluation");
  if (!signedIn) return heading;
  const holder = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, "Loading models…"));
  main.append(holder);
  gql(FORM_CHOICES)
    .then((choices) => {
      if (!signal.aborted) replace(holder, form(choices));
    })
    .catch((err) => {
      if (!signal.aborted) replace(holder, notice(err.message, "error"));
    })
    .finally(() => holder.setAttribute("aria-busy", "false"));
  return heading;
}

// A wrapper shown (and its controls sent) only for these workflows.
function only(workflows, node) {
  node.dataset.workflows = workflows;
  return node;
}

// A field across the whole fieldset: a long text and its long hint.
function wide(node) {
  node.classList.add("wide");
  return node;
}

function checkbox(label, control, { hint = "" } = {}) {
  const id = `f-${control.name}`;
  control.id = id;
  const hintId = hint ? `${id}-hint` : "";
  control.setAttribute("aria-describedby", [hintId, `${id}-error`].filter(Boolean).join(" "));
  return h("div", { class: "field check", "data-field": control.name },
    h("div", { class: "check-row" }, control, h("label", { for: id }, label)),
    hint ? h("p", { class: "hint", id: hintId }, hint) : null,
    h("p", { class: "field-error", id: `${id}-error`, hidden: true }));
}

// "imagenet/val (5,000 images, 1,000 classes)": what a dataset choice says it holds.
function datasetLabel(d) {
  const images = `${d.images.toLocaleString("en")}${d.more ? "+" : ""} image${d.images === 1 && !d.more ? "" : "s"}`;
  return `${d.name} (${images}${d.classes ? `, ${d.classes.toLocaleString("en")} classes` : ""})`;
}

// What the dataset select's hint says: its choices, and how many folders it leaves out
// (the datasets query pages its listing; the form asks for the first page only).
function datasetHint(listing) {
  const shown = listing.items.length;
  if (!shown) return "No image folders in the datasets folder the workers share yet: synthetic only.";
  const left = listing.totalCount - shown;
  const more = left > 0 || !listing.complete
    ? ` ${left.toLocaleString("en")}${listing.complete ? "" : "+"} more folder${left === 1 && listing.complete ? "" : "s"} not listed here: submit by name through the API or CLI.`
    : "";
  return `Synthetic, or an image folder in the datasets folder the workers share.${more}`;
}

function form({ models, agents, datasets: listing }) {
  const datasets = listing.items;
  const model = h("select", { name: "model", required: true },
    models.map((m) => h("option", { value: `${m.name}@${m.version}` }, `${m.name} ${m.version} (${m.framework})`)));
  const frameworks = [...new Set(agents.map((a) => a.framework))].sort();
  const framework = h("input", { name: "framework", list: "framework-choices", placeholder: "the model's own", autocomplete: "off" });
  const scenario = h("select", { name: "scenario" }, SCENARIOS.map((s) => h("option", { value: s }, s)));
  const number = (name, value, extra = {}) => h("input", { name, type: "number", inputmode: "decimal", value, ...extra });
  const text = (name, placeholder) => h("input", { name, placeholder, autocomplete: "off", spellcheck: "false" });
  const workflow = h("select", { name: "workflow" }, WORKFLOWS.map(([value, label]) => h("option", { value }, label)));
  const workflowHint = () => WORKFLOWS.find(([value]) => value === workflow.value)[3];

  const summary = h("div", { class: "form-errors", tabindex: "-1", hidden: true });
  const submitButton = h("button", { type: "submit" }, "Submit evaluation");
  const el = h("form", { class: "submit-form", novalidate: true, "aria-describedby": "submit-help" },
    h("p", { id: "submit-help", class: "hint" },
      "A live agent must serve the framework. Leave a number empty to use the default."),
    summary,
    only(RUNS, h("fieldset", {},
      h("legend", {}, "What to run"),
      field("Model", model),
      field("Framework", framework, { hint: frameworks.length ? `Live agents serve: ${frameworks.join(", ")}` : "No live agent right now." }),
      h("datalist", { id: "framework-choices" }, frameworks.map((f) => h("option", { value: f }))))),
    h("fieldset", { class: "workflow" },
      h("legend", {}, "Workflow"),
      field("Workflow", workflow, { hint: workflowHint() }),
      only("sweep", field("Sweep over", h("select", { name: "sweepParameter" },
        SWEEPABLE.map(([value, label]) => h("option", { value }, label))))),
      only("sweep", field("Values", text("sweepValues", "e.g. 1,2,4,8"),
        { hint: "Comma-separated; replaces the batch size or target QPS below." })),
      only("find-peak", field("Latency bound (ms)", number("latencyBoundMs", "", { min: 0, step: "any", placeholder: "e.g. 200" }),
        { hint: "The highest latency a probe may have at the percentile." })),
      only("find-peak", field("Percentile", h("select", { name: "percentile" },
        PERCENTILES.map((p) => h("option", { value: p, selected: p === "99" }, `p${p}`))))),
      only("find-peak", field("Start QPS", number("startQps", "", { min: 0, step: "any", placeholder: "measured" }),
        { hint: "Empty: an Offline run comes first and its throughput is the start rate." })),
      only("find-peak", field("Tolerance", number("tolerance", "0.05", { min: 0, max: 1, step: "any" }),
        { hint: "Stop when the bracket is this narrow, relative (0.05: 5 %)." })),
      only("find-peak", field("Most probes", number("maxProbes", "12", { min: 1, step: 1 }),
        { hint: "At most this many Server runs." })),
      only("repeats", field("Runs", number("count", "3", { min: 2, step: 1 }),
        { hint: "How many times it runs: 2 to 20." })),
      only("bricks", field("Granularity", number("bricksGranularity", "1", { min: 1, step: 1 }),
        { hint: "At most this many layers per brick." })),
      only("bricks", field("Image size", number("bricksImageSize", "", { min: 1, step: 1, placeholder: "the model's own" }),
        { hint: "The square input's side in pixels." })),
      only("bricks", field("Queries per brick", number("bricksQueries", "30", { min: 1, step: 1 }),
        { hint: "LoadGen SingleStream: at least this many queries per brick." })),
      only("bricks", field("Brick duration (s)", number("bricksMinDurationS", "0.05", { min: 0, step: "any" }),
        { hint: "And at least this long per run of bricks." })),
      only("training-scaling", field("World sizes", text("worldSizes", "e.g. 1,2"),
        { hint: "Comma-separated ranks per point; each point runs on as many distinct matching agents." })),
      only(TRAINING, field("Steps", number("trainingSteps", "20", { min: 1, step: 1 }),
        { hint: "Timed training steps." })),
      only(TRAINING, field("Warm-up steps", number("trainingWarmup", "3", { min: 0, step: 1 }),
        { hint: "Untimed steps first." })),
      only(TRAINING, field("Image size", number("trainingImageSize", "224", { min: 1, step: 1 }),
        { hint: "The synthetic images' side in pixels." })),
      only(TRAINING, field("Precision", h("select", { name: "trainingPrecision" },
        PRECISIONS.map((p) => h("option", { value: p }, p))))),
      only(TRAINING, field("Optimizer", h("select", { name: "trainingOptimizer" },
        OPTIMIZERS.map((o) => h("option", { value: o }, o))))),
      only("register", wide(field("Manifest (YAML)", h("textarea", { name: "manifest", rows: 14, spellcheck: "false",
        placeholder: "name: my-model\nversion: 1.0.0\nframework: {name: onnxruntime}\n…" }),
        { hint: "The manifest's text, as a manifest file holds it; its name and version must be new." }))),
      only("register", checkbox("Shared", h("input", { type: "checkbox", name: "shared", value: "yes" }),
        { hint: "Let every user list, read and submit it (default: only you)." }))),
    only(`${LOADGEN} ${TRAINING}`, h("fieldset", {},
      h("legend", {}, "How to run it"),
      only("one sweep repeats pair", field("Scenario", scenario)),
      field("Batch size", number("batchSize", "1", { min: 1, step: 1 })),
      only(LOADGEN, field("Duration (s)", number("duration", "", { min: 0, step: "any", placeholder: "LoadGen's default" }),
        { hint: "LoadGen's minimum duration. Find peak: per probe; empty sizes each probe from its rate." })),
      only("find-peak", h("p", { class: "notice warn", "data-duration-warning": "", role: "status", hidden: true })),
      only("one sweep repeats pair", field("Target QPS", number("targetQps", "", { min: 0, step: "any", placeholder: "LoadGen's default" }),
        { hint: "Expected (offline) or offered (server) queries per second." })))),
    only(LOADGEN, h("fieldset", {},
      h("legend", {}, "Server and multi-stream settings"),
      only("one sweep repeats pair", field("Target latency (ms)", number("targetLatencyMs", "", { min: 0, step: "any", placeholder: "LoadGen's default" }),
        { hint: "Server: the latency bound LoadGen judges the run by." })),
      only("one sweep repeats pair", field("Latency percentile", number("latencyPercentile", "", { min: 0, max: 100, step: "any", placeholder: "LoadGen's default" }),
        { hint: "The percentile that bound applies to, e.g. 99." })),
      field("Samples per query", number("samplesPerQuery", "", { min: 1, step: 1, placeholder: "8" }),
        { hint: "Multi-stream: samples in each query." }))),
    only(LOADGEN, h("fieldset", {},
      h("legend", {}, "Data"),
      field("Dataset", h("select", { name: "dataset" },
        h("option", { value: "synthetic" }, "synthetic (random photo-like images, made per seed)"),
        datasets.map((d) => h("option", { value: d.name }, datasetLabel(d)))),
        { hint: datasetHint(listing) }),
      field("Samples", number("samples", "64", { min: 1, step: 1 })),
      field("Seed", number("seed", "", { min: 0, step: 1, placeholder: "0" }),
        { hint: "The dataset's seed." }),
      field("Preprocessing", h("select", { name: "preprocessing" },
        PREPROCESSING.map(([value, label]) => h("option", { value }, label))),
        { hint: "How images are decoded and resized before the run; fast prepares them 2 to 3 times quicker. Inference is timed the same either way." }))),
    only(RUNS, h("fieldset", {},
      h("legend", {}, "Agent, backend and tracing"),
      field("Device", text("device", "cpu"), { hint: "Default: a device= constraint's, else cpu." }),
      field("Threads", number("threads", "", { min: 1, step: 1, placeholder: "the agent's" }),
        { hint: "Intra-op threads for this run, over the agent's setting (a find peak keeps the first probe's)." }),
      only(LOADGEN, field("Trace level", h("select", { name: "traceLevel" },
        TRACE_LEVELS.map(([value, label]) => h("option", { value }, label))),
        { hint: "Each level above NONE adds its own traced pass (the CLI's `benchstack profile`)." })),
      only("one bricks training", checkbox("Fan out", h("input", { type: "checkbox", name: "fanOut", value: "yes" }),
        { hint: "Run on every live agent that meets the constraints, one evaluation each, and compare them." })),
      wide(field("Constraints", text("constraints", "e.g. gpu, arch=x86_64, memory>=16GiB"),
        { hint: "Agent terms that must all hold, comma-separated: framework>=version, arch=, gpu or !gpu, " +
          "device=, host=, memory>=, threads=, cores>=, agent=." })),
      wide(field("Backend options", text("backendOptions", "e.g. service_time_ms=2"),
        { hint: "The backend's own options as key=value, comma-separated; numbers are sent as numbers." })))),
    h("div", { class: "actions" }, submitButton));

  const sync = () => {
    const chosen = workflow.value;
    for (const part of el.querySelectorAll("[data-workflows]")) {
      const on = part.dataset.workflows.split(" ").includes(chosen);
      part.hidden = !on;
      // Disabled controls are left out of FormData: a hidden field is never sent.
      for (const control of part.querySelectorAll("input, select, textarea")) control.disabled = !on;
    }
    el.querySelector("#f-workflow-hint").textContent = workflowHint();
    submitButton.textContent = buttonText();
  };
  const buttonText = () => WORKFLOWS.find(([value]) => value === workflow.value)[2];
  workflow.addEventListener("change", () => {
    clearErrors(el, summary);
    sync();
  });
  sync();
  // Said before submitting: find-peak probes too short for their rate are never judged.
  const warning = el.querySelector("[data-duration-warning]");
  const warn = () => {
    const value = (name) => Number(el.querySelector(`[name="${name}"]`).value || NaN);
    const said = workflow.value === "find-peak"
      ? durationWarning(value("duration"), value("startQps"), el.querySelector('[name="percentile"]').value)
      : "";
    warning.textContent = said;
    warning.hidden = !said;
  };
  for (const name of ["duration", "startQps", "percentile", "workflow"]) {
    el.querySelector(`[name="${name}"]`).addEventListener(name === "percentile" || name === "workflow" ? "change" : "input", warn);
  }

  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(el, summary);
    submitButton.disabled = true;
    submitButton.textContent = "Submitting…";
    try {
      const data = new FormData(el);
      const [destination, error] = await send(String(data.get("workflow")), data);
      if (destination) {
        window.location.hash = destination;
        return;
      }
      showError(el, summary, error, workflow.value);
    } catch (err) {
      showError(el, summary, { __typename: "Error", message: err.message, field: err.field ?? "" }, workflow.value);
    } finally {
      submitButton.disabled = false;
      submitButton.textContent = buttonText();
    }
  });
  return el;
}

// A problem the form finds before sending (a value it cannot put in the request), shown by
// its field as the API's errors are.
class FormError extends Error {
  constructor(field, message) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

// Submits the chosen workflow; answers [where to go, null] or [null, the UserError].
async function send(workflow, data) {
  const text = (name) => String(data.get(name) ?? "").trim();
  const num = (name) => (text(name) === "" ? undefined : Number(text(name)));
  const required = (name, what) => {
    if (num(name) === undefined) throw new FormError(name, `give ${what}`);
    return num(name);
  };
  if (workflow === "register") {
    const variables = { manifest: String(data.get("manifest") ?? ""), shared: Boolean(data.get("shared")) };
    const result = (await gql(REGISTER_MODEL, variables)).registerModel;
    if (result.__typename !== "Model") return [null, result];
    return [`#/models?model=${encodeURIComponent(`${result.name}@${result.version}`)}`, null];
  }
  const evaluation = toInput(data);
  const training = () => {
    const options = { precision: text("trainingPrecision"), optimizer: text("trainingOptimizer") };
    for (const [name, key] of [["trainingSteps", "steps"], ["trainingWarmup", "warmup"], ["trainingImageSize", "imageSize"]]) {
      if (num(name) !== undefined) options[key] = Math.trunc(num(name));
    }
    return options;
  };
  if (workflow === "bricks") {
    const bricks = {};
    for (const [name, key] of [["bricksGranularity", "granularity"], ["bricksImageSize", "imageSize"], ["bricksQueries", "queries"]]) {
      if (num(name) !== undefined) bricks[key] = Math.trunc(num(name));
    }
    if (num("bricksMinDurationS") !== undefined) bricks.minDurationS = num("bricksMinDurationS");
    evaluation.bricks = bricks;
  }
  if (workflow === "training") evaluation.training = training();
  if (workflow === "training-scaling") {
    const worldSizes = text("worldSizes").split(",").map((v) => v.trim()).filter(Boolean).map(Number);
    if (worldSizes.some((v) => !Number.isInteger(v))) throw new FormError("worldSizes", "whole numbers, comma-separated, e.g. 1,2");
    evaluation.training = training();
    const result = (await gql(SUBMIT_TRAINING_SCALING, { input: { evaluation, worldSizes } })).submitTrainingScaling;
    return result.__typename === "TrainingScaling" ? [groupPage(result.groupId, "training-scaling").href, null] : [null, result];
  }
  if (workflow === "pair") {
    const result = (await gql(SUBMIT_PAIR, { input: evaluation })).submitAccuracyPerformancePair;
    return result.__typename === "AccuracyPerformancePair"
      ? [groupPage(result.groupId, "accuracy-performance-pair").href, null]
      : [null, result];
  }
  if (workflow === "sweep") {
    const values = text("sweepValues").split(",").map((v) => v.trim()).filter(Boolean).map(Number);
    const input = { evaluation, parameter: text("sweepParameter"), values };
    const result = (await gql(SUBMIT_SWEEP, { input })).submitSweep;
    return result.__typename === "Sweep" ? [`#/sweeps/${result.groupId}`, null] : [null, result];
  }
  if (workflow === "find-peak") {
    const input = {
      evaluation,
      latencyBoundMs: required("latencyBoundMs", "the latency bound in ms"),
      percentile: Number(text("percentile")),
    };
    if (num("startQps") !== undefined) input.startQps = num("startQps");
    if (num("tolerance") !== undefined) input.tolerance = num("tolerance");
    if (num("maxProbes") !== undefined) input.maxProbes = Math.trunc(num("maxProbes"));
    const result = (await gql(SUBMIT_FIND_PEAK, { input })).submitFindPeak;
    return result.__typename === "FindPeak" ? [`#/find-peak/${result.groupId}`, null] : [null, result];
  }
  if (workflow === "repeats") {
    const input = { evaluation, count: Math.trunc(required("count", "how many runs, 2 to 20")) };
    const result = (await gql(SUBMIT_REPEATS, { input })).submitRepeats;
    return result.__typename === "Repeats" ? [`#/repeats/${result.groupId}`, null] : [null, result];
  }
  const result = (await gql(SUBMIT, { input: evaluation })).submitEvaluation;
  if (result.__typename === "Evaluation") return [`#/evaluations/${result.id}`, null];
  if (result.__typename === "Comparison") return [`#/compare?group=${encodeURIComponent(result.id)}`, null];
  return [null, result];
}

// "a=1, b=x" -> {a: 1, b: "x"}: numbers become numbers, as `--option` does on the CLI.
function backendOptions(value) {
  const options = {};
  for (const pair of value.split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = pair.indexOf("=");
    const key = at > 0 ? pair.slice(0, at).trim() : "";
    if (!key) throw new FormError("backendOptions", `“${pair}” must look like key=value, e.g. service_time_ms=2`);
    const raw = pair.slice(at + 1).trim();
    options[key] = raw !== "" && Number.isFinite(Number(raw)) ? Number(raw) : raw;
  }
  return options;
}

function toInput(data) {
  const text = (name) => String(data.get(name) ?? "").trim();
  // Numbers are sent as typed (even negative ones): checking them is the API's job.
  const num = (name) => (text(name) === "" ? undefined : Number(text(name)));
  const [model, version] = text("model").split("@");
  const settings = {};
  for (const [name, key] of [
    ["duration", "minDurationS"],
    ["targetQps", "targetQps"],
    ["targetLatencyMs", "targetLatencyMs"],
    ["latencyPercentile", "latencyPercentile"],
    ["samplesPerQuery", "samplesPerQuery"],
  ]) {
    if (num(name) !== undefined) settings[key] = num(name);
  }
  const input = { model, version, settings };
  // Bricks and training have no dataset: theirs is left out, not sent empty.
  if (text("dataset")) input.dataset = text("dataset");
  if (text("scenario")) input.scenario = text("scenario");
  if (text("framework")) input.framework = text("framework");
  if (text("device")) input.device = text("device");
  if (num("batchSize") !== undefined) input.batchSize = Math.trunc(num("batchSize"));
  if (num("samples") !== undefined) input.samples = Math.trunc(num("samples"));
  if (num("seed") !== undefined) input.seed = Math.trunc(num("seed"));
  if (num("threads") !== undefined) input.threads = Math.trunc(num("threads"));
  if (text("traceLevel")) input.traceLevel = text("traceLevel");
  if (text("preprocessing")) input.preprocessing = text("preprocessing");
  const require = text("constraints").split(",").map((t) => t.trim()).filter(Boolean);
  if (require.length) input.constraints = { require };
  if (text("backendOptions")) input.backendOptions = backendOptions(text("backendOptions"));
  if (data.get("fanOut")) input.fanOut = true;
  return input;
}

function clearErrors(form, summary) {
  summary.hidden = true;
  summary.replaceChildren();
  for (const slot of form.querySelectorAll(".field-error")) {
    slot.hidden = true;
    slot.textContent = "";
  }
  for (const control of form.querySelectorAll("[aria-invalid]")) control.removeAttribute("aria-invalid");
}

function showError(form, summary, error, workflow) {
  const name = controlName(error.field, workflow);
  const found = name ? form.querySelector(`[data-field="${name}"]`) : null;
  // A field of another workflow is hidden: its error stays in the summary.
  const wrapper = found && !found.closest("[hidden]") ? found : null;
  const kind = error.__typename === "Error" ? "Error" : error.__typename;
  const where = error.field ? ` in field “${error.field}”` : "";
  // The API's messages start with the field's name; it is already shown in bold.
  const prefix = `${error.field}: `;
  const message = error.field && error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
  replace(summary,
    h("p", { role: "alert" },
      h("strong", {}, `${kind}${where}: `), message));
  summary.hidden = false;
  if (wrapper) {
    const slot = wrapper.querySelector(".field-error");
    const control = wrapper.querySelector("input, select, textarea");
    replace(slot, h("strong", {}, error.field), `: ${message}`);
    slot.hidden = false;
    control.setAttribute("aria-invalid", "true");
    control.focus();
  } else {
    summary.focus();
  }
}
