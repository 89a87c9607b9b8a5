// The submit form. The server is the judge of input (the form does not block on HTML
// validation), and its typed errors are shown next to the field they name.

import { gql, getToken } from "../api.js";
import { field, h, replace } from "../dom.js";
import { FORM_CHOICES, SUBMIT, SUBMIT_SWEEP } from "../queries.js";
import { needToken, notice } from "../widgets.js";

const SCENARIOS = ["offline", "single-stream", "multi-stream", "server"];

// The API names fields as the GraphQL input does; map them onto this form's controls.
const FIELD_OF = {
  model: "model",
  version: "model",
  framework: "framework",
  frameworkVersion: "framework",
  scenario: "scenario",
  batchSize: "batchSize",
  dataset: "dataset",
  samples: "samples",
  "settings.min_duration_s": "duration",
  "settings.target_qps": "targetQps",
  parameter: "sweepParameter",
  values: "sweepValues",
};

// What a sweep may vary, as submitSweep names it (target QPS needs the server scenario).
const SWEEPABLE = [["", "nothing: one evaluation"], ["batch_size", "batch size"], ["target_qps", "target QPS (server)"]];

export function renderSubmit(main, signal) {
  const heading = h("h1", { tabindex: "-1" }, "New evaluation");
  main.append(heading);
  if (!getToken()) {
    main.append(needToken());
    return heading;
  }
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

function form({ models, agents }) {
  const model = h("select", { name: "model", required: true },
    models.map((m) => h("option", { value: `${m.name}@${m.version}` }, `${m.name} ${m.version} (${m.framework})`)));
  const frameworks = [...new Set(agents.map((a) => a.framework))].sort();
  const framework = h("input", { name: "framework", list: "framework-choices", placeholder: "the model's own", autocomplete: "off" });
  const scenario = h("select", { name: "scenario" }, SCENARIOS.map((s) => h("option", { value: s }, s)));
  const number = (name, value, extra = {}) => h("input", { name, type: "number", inputmode: "decimal", value, ...extra });

  const summary = h("div", { class: "form-errors", tabindex: "-1", hidden: true });
  const submitButton = h("button", { type: "submit" }, "Submit evaluation");
  const el = h("form", { class: "submit-form", novalidate: true, "aria-describedby": "submit-help" },
    h("p", { id: "submit-help", class: "hint" },
      "A live agent must serve the framework. Leave a number empty to use the default."),
    summary,
    h("fieldset", {},
      h("legend", {}, "What to run"),
      field("Model", model),
      field("Framework", framework, { hint: frameworks.length ? `Live agents serve: ${frameworks.join(", ")}` : "No live agent right now." }),
      h("datalist", { id: "framework-choices" }, frameworks.map((f) => h("option", { value: f })))),
    h("fieldset", {},
      h("legend", {}, "How to run it"),
      field("Scenario", scenario),
      field("Batch size", number("batchSize", "1", { min: 1, step: 1 })),
      field("Duration (s)", number("duration", "", { min: 0, step: "any", placeholder: "LoadGen's default" }),
        { hint: "LoadGen's minimum duration." }),
      field("Target QPS", number("targetQps", "", { min: 0, step: "any", placeholder: "LoadGen's default" }),
        { hint: "Expected (offline) or offered (server) queries per second." })),
    h("fieldset", {},
      h("legend", {}, "Sweep"),
      field("Sweep over", h("select", { name: "sweepParameter" },
        SWEEPABLE.map(([value, text]) => h("option", { value }, text))),
        { hint: "One evaluation per value, run on one agent with the model loaded once; the curve draws as they finish." }),
      field("Values", h("input", { name: "sweepValues", placeholder: "e.g. 1,2,4,8", autocomplete: "off" }),
        { hint: "Comma-separated; replaces the batch size or target QPS above." })),
    h("fieldset", {},
      h("legend", {}, "Data"),
      field("Dataset", h("select", { name: "dataset" }, h("option", { value: "synthetic" }, "synthetic"))),
      field("Samples", number("samples", "64", { min: 1, step: 1 }))),
    h("div", { class: "actions" }, submitButton));

  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(el, summary);
    submitButton.disabled = true;
    submitButton.textContent = "Submitting…";
    try {
      const data = new FormData(el);
      const parameter = String(data.get("sweepParameter") ?? "");
      if (parameter) {
        const values = String(data.get("sweepValues") ?? "").split(",").map((v) => v.trim()).filter(Boolean).map(Number);
        const sweep = { evaluation: toInput(data), parameter, values };
        const result = (await gql(SUBMIT_SWEEP, { input: sweep })).submitSweep;
        if (result.__typename === "Sweep") {
          window.location.hash = `#/sweeps/${result.groupId}`;
          return;
        }
        showError(el, summary, result);
        return;
      }
      const result = (await gql(SUBMIT, { input: toInput(data) })).submitEvaluation;
      if (result.__typename === "Evaluation") {
        window.location.hash = `#/evaluations/${result.id}`;
        return;
      }
      showError(el, summary, result);
    } catch (err) {
      showError(el, summary, { __typename: "Error", message: err.message, field: "" });
    } finally {
      submitButton.disabled = false;
      submitButton.textContent = "Submit evaluation";
    }
  });
  return el;
}

function toInput(data) {
  const text = (name) => String(data.get(name) ?? "").trim();
  // Numbers are sent as typed (even negative ones): checking them is the API's job.
  const num = (name) => (text(name) === "" ? undefined : Number(text(name)));
  const [model, version] = text("model").split("@");
  const settings = {};
  if (num("duration") !== undefined) settings.minDurationS = num("duration");
  if (num("targetQps") !== undefined) settings.targetQps = num("targetQps");
  const input = { model, version, scenario: text("scenario"), dataset: text("dataset"), settings };
  if (text("framework")) input.framework = text("framework");
  if (num("batchSize") !== undefined) input.batchSize = Math.trunc(num("batchSize"));
  if (num("samples") !== undefined) input.samples = Math.trunc(num("samples"));
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

function showError(form, summary, error) {
  const name = FIELD_OF[error.field];
  const wrapper = name ? form.querySelector(`[data-field="${name}"]`) : null;
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
    const control = wrapper.querySelector("input, select");
    replace(slot, h("strong", {}, error.field), `: ${message}`);
    slot.hidden = false;
    control.setAttribute("aria-invalid", "true");
    control.focus();
  } else {
    summary.focus();
  }
}
