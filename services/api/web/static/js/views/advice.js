// Advice: for a model and a latency bound, each system's highest Server QPS under it (from
// stored find-peak probes), the cost per million inferences where the machine declares a
// price, and the cheapest system meeting the bound; systems without a figure say what
// would measure them. The query is in the URL, so advice can be shared:
// #/advice?model=resnet18&bound=500&percentile=99.

import { gql } from "../api.js";
import { field, h, replace } from "../dom.js";
import { DASH, number } from "../format.js";
import { ADVICE } from "../queries.js";
import { notice, openView, verdictBadge } from "../widgets.js";

const PERCENTILES = ["50", "90", "95", "97", "99", "99.9"];

export function renderAdvice(main, signal, query) {
  const { heading, signedIn } = openView(main, "Advice");
  if (!signedIn) return heading;
  const given = new URLSearchParams(query);
  const model = h("input", { name: "model", required: true, value: given.get("model") ?? "", placeholder: "resnet18" });
  const bound = h("input", {
    name: "bound", type: "number", min: "0.001", step: "any", required: true, value: given.get("bound") ?? "",
  });
  const percentile = h("select", { name: "percentile" },
    PERCENTILES.map((p) => h("option", { value: p, selected: p === (given.get("percentile") ?? "99") }, `p${p}`)));
  const body = h("div", { class: "advice-result", "aria-live": "polite" });
  const form = h("form", { class: "card advice-form" },
    h("p", { class: "small muted" },
      "Per system (machine, framework, settings): the highest Server QPS whose latency percentile LoadGen judged within ",
      "the bound, from stored find-peak probes, and what a million inferences cost there."),
    h("div", { class: "fields" },
      field("Model", model),
      field("Latency bound (ms)", bound),
      field("Percentile", percentile)),
    h("button", { type: "submit", class: "primary" }, "Advise"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const params = new URLSearchParams({ model: model.value.trim(), bound: bound.value, percentile: percentile.value });
    window.location.hash = `#/advice?${params}`;
  });
  main.append(form, body);
  if (given.get("model") && given.get("bound")) {
    body.setAttribute("aria-busy", "true");
    replace(body, notice("Reading the stored find-peak results…"));
    load(body, signal, given.get("model"), Number(given.get("bound")), Number(given.get("percentile") ?? "99"))
      .finally(() => body.setAttribute("aria-busy", "false"));
  }
  return heading;
}

async function load(body, signal, model, bound, percentile) {
  try {
    const advice = (await gql(ADVICE, { model, bound, percentile })).advice;
    if (signal.aborted) return;
    if (advice.__typename !== "Advice") {
      replace(body, notice(advice.message, "error"));
      return;
    }
    replace(body, result(advice));
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
  }
}

function result(advice) {
  const pct = `p${advice.percentile}`;
  return h("section", { class: "card", "aria-labelledby": "advice-title", "data-cheapest": advice.cheapest ?? "" },
    h("h2", { id: "advice-title" }, `${advice.model}: ${pct} ≤ ${advice.latencyBoundMs} ms`),
    h("p", { class: "conclusion", "data-conclusion": "" }, advice.conclusion),
    advice.systems.length
      ? h("div", { class: "table-wrap" },
          h("table", { class: "advice-table" },
            h("thead", {}, h("tr", {},
              ["System", "Status", "QPS", `${pct} ms`, "Verdicts", "Price / h", "Cost per million"].map((t) => h("th", { scope: "col" }, t)))),
            h("tbody", {}, advice.systems.map((s) => systemRow(s, advice.cheapest)))))
      : null,
    advice.missing.length
      ? h("details", { class: "missing" }, h("summary", {}, `Missing or not judged (${advice.missing.length})`),
          h("ul", {}, advice.missing.map((line) => h("li", {}, line))))
      : null);
}

function systemRow(system, cheapest) {
  const meets = system.status === "meets the bound";
  return h("tr", {
    "data-machine": system.machine,
    "data-status": system.status,
    "data-qps": system.qps ?? "",
    "data-cheapest": system.system === cheapest ? "yes" : "no",
  },
    h("th", { scope: "row" }, system.system,
      system.system === cheapest ? h("span", { class: "badge tone-good" }, " CHEAPEST") : null,
      system.notes.length ? h("div", { class: "small muted" }, system.notes.join("; ")) : null,
      system.command ? h("div", { class: "small" }, "Measure it: ", h("code", {}, system.command)) : null,
      system.groupId ? h("div", { class: "small" }, h("a", { href: `#/find-peak/${system.groupId}` }, "the find-peak search")) : null),
    h("td", {}, h("span", { class: `badge tone-${meets ? "good" : "warn"}` }, system.status)),
    h("td", { class: "num" }, system.qps == null ? DASH : number(system.qps, 1)),
    h("td", { class: "num" }, system.latencyMs == null ? DASH : number(system.latencyMs, 2)),
    h("td", {}, verdictBadge(system.validity, "LoadGen validity"), " ", verdictBadge(system.stability, "stability"),
      // The peak's host verdict, as every figure carries it (services/core/shown_figures.py).
      system.busy ? [" ", h("span", { class: "badge tone-bad", "data-busy": "", title: `host busy: ${system.busyNote}` }, "BUSY")] : null),
    h("td", { class: "num" }, system.pricePerHour == null ? DASH : number(system.pricePerHour, 2)),
    h("td", { class: "num", "data-cost-unit": system.costUnit },
      system.costPerMillion == null ? DASH : `${number(system.costPerMillion, 4)} per 1M ${system.costUnit}`));
}
