// Small shared pieces of markup: badges and notices.

import { h } from "./dom.js";
import { DASH } from "./format.js";

// Colour is never the only signal: every badge spells out its value.
export function stateBadge(state) {
  return h("span", { class: `badge state-${String(state).toLowerCase()}` }, state ?? DASH);
}

export function verdictBadge(verdict, kind) {
  if (!verdict) return h("span", { class: "muted" }, DASH);
  const tone = { VALID: "good", STABLE: "good", INVALID: "bad", UNSTABLE: "bad" }[verdict] ?? "neutral";
  return h("span", { class: `badge tone-${tone}`, title: kind }, verdict);
}

export function notice(message, tone = "info") {
  return h("p", { class: `notice ${tone}`, role: tone === "error" ? "alert" : "status" }, message);
}

export function needToken() {
  return notice("Paste your API token in the field at the top right and save it to see your evaluations.", "info");
}
