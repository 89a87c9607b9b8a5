// The compare page's part for workloads with a run-page module of their own
// (Workload.web_view): a module may also export compare(evaluations), which resolves to
// { settings: Map(evaluation id -> [[label, value]]), cards(labelOf) -> elements }: the
// settings lined up (and marked where they differ) and its own figures cards. The page
// names no workload: evaluations whose module exports none keep the page's own cards.

import { workloadView } from "../workload_views.js";

export async function workloadComparisons(evaluations) {
  const found = { settings: new Map(), makers: [], ids: new Set() };
  const byWorkload = new Map();
  for (const e of evaluations) {
    if (!e.workload) continue;
    byWorkload.set(e.workload, [...(byWorkload.get(e.workload) ?? []), e]);
  }
  for (const [workload, members] of byWorkload) {
    const view = await workloadView(workload).catch(() => null);
    if (typeof view?.compare !== "function") continue;
    const own = await view.compare(members);
    for (const [id, pairs] of own.settings) found.settings.set(id, pairs);
    found.makers.push(own.cards);
    for (const e of members) found.ids.add(e.id);
  }
  return found;
}
