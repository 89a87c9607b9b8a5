// The frame a campaign group's page shares (repeats, sweep, find-peak): the way back and the
// group's cancel button, the token check, and a poll that redraws the page (and its chart)
// only when the group changed, until the group has settled.

import { gql } from "../api.js";
import { h, replace } from "../dom.js";
import { plot } from "../charts.js";
import { backToList, groupCancelButton, notice, openView } from "../widgets.js";

const POLL_MS = 1000;

// page: { title, loading ("the sweep"), missing ("sweep": "No sweep <id> …"),
//   query, field (the query's result), view(group) -> nodes, chart (its data-chart),
//   figure(group) -> [traces, axes] or null when nothing is measured yet,
//   settled(group) -> true once nothing more will change }
export function renderGroupPage(main, signal, groupId, page) {
  const { heading, signedIn } = openView(main, page.title, backToList(" ", groupCancelButton(groupId)));
  if (!signedIn) return heading;
  const body = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, `Loading ${page.loading}…`));
  main.append(body);
  let drawn = "";
  const load = async () => {
    try {
      const group = (await gql(page.query, { id: groupId }))[page.field];
      if (signal.aborted) return;
      if (!group) {
        replace(body, notice(`No ${page.missing} ${groupId} among your evaluations.`, "error"));
        return;
      }
      // Redrawn only when something changed, so a chart being read does not flicker.
      const state = JSON.stringify(group);
      if (state !== drawn) {
        drawn = state;
        replace(body, ...page.view(group));
        const box = body.querySelector(`[data-chart="${page.chart}"]`);
        const figure = box && page.figure(group);
        if (figure) await plot(box, ...figure);
      }
      body.setAttribute("aria-busy", "false");
      if (!page.settled(group)) setTimeout(() => signal.aborted || load(), POLL_MS);
    } catch (err) {
      if (!signal.aborted) replace(body, notice(err.message, "error"));
    }
  };
  load();
  return heading;
}
