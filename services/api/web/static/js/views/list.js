// The evaluations list: filters, a table of the caller's evaluations, paging.

import { gql, getToken } from "../api.js";
import { h, replace } from "../dom.js";
import { figureCell } from "../figures.js";
import { groupPage, latestRun, number, scenarioName, shortId, stability, when } from "../format.js";
import { EVALUATIONS } from "../queries.js";
import { needToken, notice, stateBadge, verdictBadge } from "../widgets.js";
import { MAX_COMPARED, compareUrl } from "./compare.js";

const PAGE_SIZE = 20;
const REFRESH_MS = 3000;
const STATES = ["QUEUED", "PREPROCESSING", "RUNNING", "AGGREGATING", "SUCCEEDED", "FAILED", "CANCELLED"];

// Kept across visits so coming back from a detail page shows the same filters, page and
// the evaluations picked for comparison (across pages too).
const state = { where: {}, cursors: [null], selected: [] };

export function renderList(main, signal) {
  const heading = h("h1", { tabindex: "-1" }, "Evaluations");
  // Not a live region: the 3 s refresh would re-read the whole table to a screen reader.
  const body = h("div", { class: "list-body", "aria-busy": "true" });
  const compare = h("button", { type: "button", class: "secondary", "data-action": "compare" });
  const showSelection = () => {
    const n = state.selected.length;
    compare.textContent = `Compare selected (${n})`;
    compare.disabled = n < 2;
  };
  compare.addEventListener("click", () => {
    window.location.hash = compareUrl(state.selected);
  });
  showSelection();
  body.addEventListener("change", (event) => {
    const box = event.target.closest?.("input[data-select]");
    if (!box) return;
    const id = box.dataset.select;
    state.selected = state.selected.filter((s) => s !== id);
    if (box.checked) state.selected.push(id);
    showSelection();
    // At most MAX_COMPARED: the others are disabled, not silently dropped.
    for (const other of body.querySelectorAll("input[data-select]")) {
      other.disabled = !other.checked && state.selected.length >= MAX_COMPARED;
    }
  });
  main.append(
    h("div", { class: "view-head" }, heading,
      h("div", { class: "compare-bar" }, compare, h("a", { class: "button", href: "#/new" }, "New evaluation"))),
    filters(() => {
      state.cursors = [null];
      load();
    }),
    body,
  );

  let timer = 0;
  signal.addEventListener("abort", () => clearTimeout(timer));

  async function load() {
    clearTimeout(timer);
    if (!getToken()) {
      replace(body, needToken());
      return;
    }
    body.setAttribute("aria-busy", "true");
    try {
      const after = state.cursors[state.cursors.length - 1];
      const data = await gql(EVALUATIONS, { where: state.where, first: PAGE_SIZE, after });
      if (signal.aborted) return;
      const page = data.evaluations;
      replace(body, table(page), pager(page, load));
      // Follow evaluations still in flight, without a websocket per row.
      if (page.items.some((e) => !e.done)) timer = setTimeout(load, REFRESH_MS);
    } catch (err) {
      if (!signal.aborted) replace(body, notice(err.message, "error"));
    } finally {
      body.setAttribute("aria-busy", "false");
    }
  }
  load();
  return heading;
}

function filters(onChange) {
  const input = (name, label, placeholder) =>
    h("div", { class: "field" },
      h("label", { for: `filter-${name}` }, label),
      h("input", { id: `filter-${name}`, name, placeholder, value: state.where[name] ?? "" }));
  const status = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "" }, "any"),
    STATES.map((s) => h("option", { value: s, selected: state.where.status === s }, s.toLowerCase())));
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter evaluations" },
    input("model", "Model", "e.g. resnet18"),
    input("framework", "Framework", "e.g. onnxruntime"),
    h("div", { class: "field" }, h("label", { for: "filter-status" }, "Status"), status),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Apply filters"),
      h("button", { type: "reset", class: "secondary" }, "Clear")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    state.where = {};
    for (const key of ["model", "framework", "status"]) {
      const value = String(data.get(key) ?? "").trim();
      if (value) state.where[key] = value;
    }
    onChange();
  });
  // Reset clears the inputs itself; the list follows once it has.
  form.addEventListener("reset", () => setTimeout(() => form.requestSubmit(), 0));
  return form;
}

function table(page) {
  if (!page.items.length) {
    const filtered = Object.keys(state.where).length > 0;
    return notice(filtered ? "No evaluation matches these filters." : "No evaluations yet: submit one.");
  }
  const headers = ["Compare", "State", "Model", "Framework", "Scenario", "Batch", "Samples/s", "p90 (ms)", "Validity", "Stability", "Submitted"];
  return h("div", { class: "table-wrap" },
    h("table", { class: "evaluations" },
      h("caption", {}, `${page.totalCount} evaluation${page.totalCount === 1 ? "" : "s"}`),
      h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col", class: t === "Compare" ? "select-cell" : null }, t)))),
      h("tbody", {}, page.items.map(row))));
}

function row(evaluation) {
  const run = latestRun(evaluation);
  const picked = state.selected.includes(evaluation.id);
  const label = `Compare ${evaluation.modelName} ${evaluation.modelVersion}, evaluation ${shortId(evaluation.id)}`;
  return h("tr", { "data-id": evaluation.id, "data-state": evaluation.state },
    h("td", { class: "select-cell" },
      h("input", {
        type: "checkbox", "data-select": evaluation.id, "aria-label": label, checked: picked,
        disabled: !picked && state.selected.length >= MAX_COMPARED,
      })),
    h("td", {}, stateBadge(evaluation.state),
      // Why an unfinished evaluation is where it is: a RUNNING one waiting for the host
      // (one measurement per host at a time), a QUEUED one re-dispatched, ...
      !evaluation.done && evaluation.reason
        ? h("div", { class: "small muted state-reason", "data-state-reason": "" }, evaluation.reason)
        : null),
    h("th", { scope: "row" },
      h("a", { href: `#/evaluations/${evaluation.id}`, "aria-label": `${evaluation.modelName} ${evaluation.modelVersion}, evaluation ${shortId(evaluation.id)}` },
        evaluation.modelName, h("span", { class: "muted" }, ` ${evaluation.modelVersion}`)),
      h("div", { class: "mono muted small" }, shortId(evaluation.id),
        evaluation.groupId ? [" · ", groupLink(evaluation)] : null)),
    h("td", {}, evaluation.framework),
    h("td", {}, evaluation.workload === "training" ? "training" : scenarioName(evaluation.scenario)),
    h("td", { class: "num" }, evaluation.batchSize),
    // Each figure as the one rule gives it: BUSY beside it where the host was busy, and
    // no p90 for an Offline run (its latencies are queue positions).
    h("td", { class: "num", "data-col": "samples-per-second" },
      // A workload's own outcome (training, bricks) is not a LoadGen figure: its page
      // carries its verdicts (item 2 of issue 54 gives it its own row).
      evaluation.workload !== "loadgen" && !run?.shownFigures?.length
        ? number(run?.samplesPerSecond, 1) : figureCell(run, "samples_per_second", 1)),
    h("td", { class: "num", "data-col": "p90" }, figureCell(run, "latency_p90", 3)),
    h("td", {}, verdictBadge(run?.validity, "LoadGen validity")),
    h("td", {}, verdictBadge(stability(run), "stability")),
    h("td", { class: "small" }, when(evaluation.createdAt)));
}

function pager(page, load) {
  const pageNumber = state.cursors.length;
  const prev = h("button", { type: "button", class: "secondary", disabled: pageNumber === 1 }, "← Previous page");
  const next = h("button", { type: "button", class: "secondary", disabled: !page.nextCursor }, "Next page →");
  prev.addEventListener("click", () => {
    state.cursors.pop();
    load();
  });
  next.addEventListener("click", () => {
    state.cursors.push(page.nextCursor);
    load();
  });
  const pages = Math.max(1, Math.ceil(page.totalCount / PAGE_SIZE));
  return h("nav", { class: "pager", "aria-label": "Pages" }, prev, h("span", {}, `Page ${pageNumber} of ${pages}`), next);
}

function groupLink(evaluation) {
  const { href, label } = groupPage(evaluation.groupId, evaluation.groupKind);
  return h("a", { href, "data-group-link": evaluation.groupKind ?? "fan-out" }, label);
}
