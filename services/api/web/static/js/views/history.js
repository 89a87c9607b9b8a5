// History: a figure's series per system for a model (GraphQL history), oldest run first,
// each run with its interval and verdicts, BUSY runs marked (never judged), what changed
// since the run before, and the change points where the series moved beyond its noise.
// The query is in the URL, so a history can be shared: #/history?model=resnet18&figure=p99.

import { gql, getToken } from "../api.js";
import { field, h, replace } from "../dom.js";
import { DASH, number, shortId, when } from "../format.js";
import { HISTORY } from "../queries.js";
import { needToken, notice, verdictBadge } from "../widgets.js";

const FIGURES = ["samples_per_second", "p50", "p90", "p99", "mean"];

export function renderHistory(main, signal, query) {
  const heading = h("h1", { tabindex: "-1" }, "History");
  main.append(heading);
  if (!getToken()) {
    main.append(needToken());
    return heading;
  }
  const given = new URLSearchParams(query);
  const model = h("input", { name: "model", required: true, value: given.get("model") ?? "", placeholder: "resnet18" });
  const figure = h("select", { name: "figure" },
    FIGURES.map((f) => h("option", { value: f, selected: f === (given.get("figure") ?? "samples_per_second") }, f)));
  const body = h("div", { class: "history-result", "aria-live": "polite" });
  const form = h("form", { class: "card history-form" },
    h("p", { class: "small muted" },
      "Every stored run of the model per system (machine, framework, device, scenario), oldest first: ",
      "what changed between runs, and where the figure moved beyond its noise."),
    h("div", { class: "fields" }, field("Model", model), field("Figure", figure)),
    h("button", { type: "submit", class: "primary" }, "Show"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    window.location.hash = `#/history?${new URLSearchParams({ model: model.value.trim(), figure: figure.value })}`;
  });
  main.append(form, body);
  if (given.get("model")) {
    body.setAttribute("aria-busy", "true");
    replace(body, notice("Reading the stored runs…"));
    load(body, signal, given.get("model"), given.get("figure") ?? "samples_per_second")
      .finally(() => body.setAttribute("aria-busy", "false"));
  }
  return heading;
}

async function load(body, signal, model, figure) {
  try {
    const found = (await gql(HISTORY, { model, figure })).history;
    if (signal.aborted) return;
    if (found.__typename !== "History") {
      replace(body, notice(found.message, "error"));
      return;
    }
    replace(body, ...(found.series.length
      ? found.series.map((s) => seriesCard(model, found.figure, s))
      : [notice(`No stored performance run of ${model}.`)]));
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
  }
}

function intervalText(interval) {
  return interval ? ` [${number(interval[0], 2)}, ${number(interval[1], 2)}]` : "";
}

function seriesCard(model, figure, series) {
  const at = new Map(series.changePoints.map((c) => [c.runId, c]));
  return h("section", { class: "card", "data-system": series.system },
    h("h2", {}, `${model} on ${series.system}`),
    series.changePoints.length
      ? h("ul", { class: "change-points" }, series.changePoints.map(changeItem(series.unit)))
      : h("p", { class: "muted" }, "No change point beyond noise."),
    h("div", { class: "table-wrap" },
      h("table", { class: "history-table" },
        h("thead", {}, h("tr", {},
          ["Run", "Created", `${figure} (${series.unit}) [95 %]`, "Verdicts", "Host", "Changed since the run before"]
            .map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, series.points.map((p) => pointRow(p, at.get(p.runId)))))));
}

function changeItem(unit) {
  return (c) => h("li", { "data-change-point": c.runId },
    h("strong", {}, `${shortId(c.runId)}: ${number(c.before, 2)} → ${number(c.after, 2)} ${unit}`),
    ` ${c.change > 0 ? "+" : ""}${number(c.change * 100, 1)} % (${c.better ? "better" : "worse"}; noise band ±${number(c.band * 100, 1)} %)`,
    intervalText(c.interval),
    h("div", { class: "small" }, "Changed: ", c.changes.length ? c.changes.join("; ") : "nothing recorded"));
}

function pointRow(point, change) {
  return h("tr", { "data-run": point.runId, "data-busy": point.busy ? "yes" : "no" },
    h("th", { scope: "row" }, shortId(point.runId),
      change ? h("span", { class: "badge tone-warn", title: "change point" }, " CHANGE") : null),
    h("td", {}, when(point.createdAt)),
    h("td", { class: "num" }, (point.value == null ? DASH : number(point.value, 2)) + intervalText(point.interval)),
    h("td", {}, verdictBadge(point.validity, "LoadGen validity"), " ", verdictBadge(point.stabilityVerdict, "stability")),
    h("td", {}, point.busy ? h("span", { class: "badge tone-bad" }, "BUSY (not judged)") : "quiet"),
    h("td", { class: "small" }, point.changes.length ? point.changes.join("; ") : DASH));
}
