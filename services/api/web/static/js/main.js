// Entry point: the token form and a hash router (#/, #/new, #/evaluations/<id>,
// #/compare?ids=a,b or ?group=g, #/sweeps/<group>, #/find-peak/<group>, #/repeats/<group>,
// #/training-scaling/<group>, #/advice?model=m&bound=ms&percentile=p, #/history?model=m&figure=f, #/agents, #/models?model=name@version).
// Each navigation aborts the previous view's signal so its timers and sockets stop.

import { TOKEN_KEY, getToken, setToken } from "./api.js";
import { renderAdvice } from "./views/advice.js";
import { renderAgents } from "./views/agents.js";
import { renderCompare } from "./views/compare.js";
import { renderDetail } from "./views/detail.js";
import { renderFindPeak } from "./views/find_peak.js";
import { renderHistory } from "./views/history.js";
import { renderList } from "./views/list.js";
import { renderModels } from "./views/models.js";
import { renderRepeats } from "./views/repeats.js";
import { renderSubmit } from "./views/submit.js";
import { renderSweep } from "./views/sweep.js";
import { renderTrainingScaling } from "./views/training_scaling.js";

const main = document.getElementById("main");
let current = new AbortController();

// A campaign group's page, #/<path>/<group>: reached from the list, so it keeps its tab.
function groupPage(path, title, render) {
  return { pattern: new RegExp(`^#/${path}/([\\w-]+)$`), nav: "list", title, render: (signal, id) => render(main, signal, id) };
}

const ROUTES = [
  { pattern: /^#?\/?$/, nav: "list", title: "Evaluations", render: (signal) => renderList(main, signal) },
  { pattern: /^#\/new$/, nav: "new", title: "New evaluation", render: (signal) => renderSubmit(main, signal) },
  {
    pattern: /^#\/evaluations\/([\w-]+)$/,
    nav: "list",
    title: "Evaluation",
    render: (signal, id) => renderDetail(main, signal, id),
  },
  {
    pattern: /^#\/compare(?:\?(.*))?$/,
    nav: "list",
    title: "Compare",
    render: (signal, query) => renderCompare(main, signal, query ?? ""),
  },
  groupPage("sweeps", "Sweep", renderSweep),
  groupPage("find-peak", "Find peak", renderFindPeak),
  groupPage("repeats", "Repeats", renderRepeats),
  groupPage("training-scaling", "Training scaling", renderTrainingScaling),
  {
    pattern: /^#\/advice(?:\?(.*))?$/,
    nav: "advice",
    title: "Advice",
    render: (signal, query) => renderAdvice(main, signal, query ?? ""),
  },
  {
    pattern: /^#\/history(?:\?(.*))?$/,
    nav: "history",
    title: "History",
    render: (signal, query) => renderHistory(main, signal, query ?? ""),
  },
  { pattern: /^#\/agents$/, nav: "agents", title: "Agents", render: (signal) => renderAgents(main, signal) },
  {
    pattern: /^#\/models(?:\?(.*))?$/,
    nav: "models",
    title: "Models",
    render: (signal, query) => renderModels(main, signal, query ?? ""),
  },
];

function route({ focus = true } = {}) {
  current.abort();
  current = new AbortController();
  main.replaceChildren();
  const hash = window.location.hash || "#/";
  const match = ROUTES.map((r) => [r, r.pattern.exec(hash)]).find(([, m]) => m);
  if (!match) {
    window.location.hash = "#/";
    return;
  }
  const [spec, groups] = match;
  document.title = `${spec.title} · benchstack`;
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === spec.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const heading = spec.render(current.signal, ...groups.slice(1));
  // Move focus to the new view's heading, so keyboard and screen-reader users follow.
  if (focus && heading) heading.focus();
}

function setUpToken() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  const status = document.getElementById("token-status");
  const show = () => {
    status.textContent = getToken() ? "Token saved" : "No token";
    status.dataset.saved = getToken() ? "yes" : "no";
  };
  input.value = getToken();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(input.value.trim());
  });
  document.getElementById("token-forget").addEventListener("click", () => {
    input.value = "";
    setToken("");
  });
  window.addEventListener("tokenchange", () => {
    show();
    route({ focus: false });
  });
  // A token saved or forgotten in another tab of this site: localStorage is shared, so
  // this tab's requests already use it; its header and view follow.
  window.addEventListener("storage", (event) => {
    if (event.key !== null && event.key !== TOKEN_KEY) return;
    input.value = getToken();
    show();
    route({ focus: false });
  });
  show();
}

setUpToken();
window.addEventListener("hashchange", () => route());
route({ focus: false });
