// The models a caller can evaluate: their own registered ones, those others shared, and
// the shipped catalogue, each with its manifest. ?model=name@version (where the form's
// registration lands) marks that model's row and opens its manifest.

import { gql } from "../api.js";
import { h, replace } from "../dom.js";
import { MODELS } from "../queries.js";
import { backToList, notice, openView } from "../widgets.js";

const ORIGINS = [
  ["registered", "Registered models", "Registered through registerModel: yours, and others' shared ones."],
  ["catalogue", "Catalogue", "Shipped with benchstack; every user may evaluate them."],
];

export function renderModels(main, signal, query = "") {
  const back = backToList(" · ", h("a", { href: "#/new" }, "Register a model or run one"));
  const { heading, signedIn } = openView(main, "Models", back);
  const chosen = new URLSearchParams(query).get("model") ?? "";
  if (!signedIn) return heading;
  const body = h("div", { class: "models", "aria-busy": "true" }, notice("Loading the models…"));
  main.append(body);
  load(body, signal, chosen).finally(() => body.setAttribute("aria-busy", "false"));
  return heading;
}

async function load(body, signal, chosen) {
  try {
    const models = (await gql(MODELS)).models;
    if (signal.aborted) return;
    replace(body, ORIGINS.map(([origin, title, hint]) => section(origin, title, hint, models.filter((m) => m.origin === origin))));
    const row = chosen ? [...body.querySelectorAll("tr[data-model]")].find((r) => r.dataset.model === chosen) : null;
    if (row) {
      row.classList.add("chosen");
      row.setAttribute("aria-current", "true");
      row.querySelector("details").open = true;
      row.scrollIntoView({ block: "center" });
    } else if (chosen) {
      body.prepend(notice(`No model ${chosen} visible to this token.`, "warn"));
    }
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
  }
}

function section(origin, title, hint, models) {
  const id = `models-${origin}`;
  return h("section", { class: "card", "aria-labelledby": id, "data-origin": origin },
    h("h2", { id }, `${title} (${models.length})`),
    h("p", { class: "small muted" }, hint),
    models.length
      ? h("div", { class: "table-wrap" },
          h("table", { class: "models-table" },
            h("thead", {}, h("tr", {}, ["Model", "Framework", "Description and manifest"].map((t) => h("th", { scope: "col" }, t)))),
            h("tbody", {}, models.map(row))))
      : h("p", { class: "muted" }, origin === "registered" ? "None registered yet." : "The catalogue is empty."));
}

function row(model) {
  return h("tr", { "data-model": `${model.name}@${model.version}` },
    h("th", { scope: "row" }, model.name, h("span", { class: "muted" }, ` ${model.version}`),
      model.origin === "registered" ? h("div", { class: "small muted" }, model.shared ? "shared" : "only yours") : null),
    h("td", {}, model.framework),
    h("td", {},
      h("p", { class: "description" }, model.description || "—"),
      h("details", {},
        h("summary", {}, "Show manifest"),
        // Text, never HTML: a manifest is user-supplied.
        h("pre", { class: "manifest" }, JSON.stringify(model.manifest, null, 2)))));
}
