// Small shared pieces of markup: badges, notices and the group cancel button.

import { getToken, gql } from "./api.js";
import { h } from "./dom.js";
import { DASH } from "./format.js";
import { CANCEL_GROUP } from "./queries.js";

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

// The way back to the list, and what stands beside it (a group's link, a button).
export function backToList(...beside) {
  return h("p", {}, h("a", { href: "#/" }, "← All evaluations"), ...beside);
}

// A view's start: what stands above its heading (a way back, a button), the heading, and
// whether a token is saved; without one the view says why it shows nothing, and stops.
export function openView(main, title, ...above) {
  const heading = h("h1", { tabindex: "-1" }, title);
  main.append(...above, heading);
  const signedIn = Boolean(getToken());
  if (!signedIn) main.append(needToken());
  return { heading, signedIn };
}

export function needToken() {
  return notice("Paste your API token in the field at the top right and save it to see your evaluations.", "info");
}

// "Cancel the whole group": every unfinished member is cancelled and the group submits no
// more (GraphQL cancelGroup); ``onDone`` is told what the API answered.
export function groupCancelButton(groupId, onDone = () => {}) {
  const said = h("span", { class: "small muted", role: "status", "data-group-cancelled": "" });
  const button = h("button", { type: "button", class: "danger", "data-cancel-group": groupId }, "Cancel the whole group");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const answer = (await gql(CANCEL_GROUP, { id: groupId })).cancelGroup;
      if (answer.__typename !== "GroupCancelled") throw new Error(answer.message);
      said.textContent = ` ${answer.cancelled.length} cancelled, ${answer.alreadyFinished.length} had already ended.`;
      onDone(answer);
    } catch (err) {
      said.textContent = ` ${err.message}`;
      button.disabled = false;
    }
  });
  return h("span", { class: "group-cancel" }, button, said);
}
