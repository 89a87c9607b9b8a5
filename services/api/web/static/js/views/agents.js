// The agents: each worker's hardware, frameworks and versions, settings, whether it is
// alive, and the caller's own recent evaluations on it (others' are never shown).

import { gql } from "../api.js";
import { h, replace } from "../dom.js";
import { DASH, bytes, latestRun, number, scenarioName, shortId, stability, when } from "../format.js";
import { busyBadge } from "../figures.js";
import { AGENT_RUNS, AGENTS } from "../queries.js";
import { notice, openView, stateBadge, verdictBadge } from "../widgets.js";

const RECENT = 5;

export function renderAgents(main, signal) {
  const { heading, signedIn } = openView(main, "Agents");
  if (!signedIn) return heading;
  const body = h("div", { class: "agents", "aria-busy": "true" }, notice("Loading the agents…"));
  main.append(body);
  load(body, signal).finally(() => body.setAttribute("aria-busy", "false"));
  return heading;
}

async function load(body, signal) {
  try {
    const agents = (await gql(AGENTS)).agents;
    if (signal.aborted) return;
    if (!agents.length) {
      replace(body, notice("No agent has registered yet: start one with `benchstack agent`."));
      return;
    }
    // Live agents first; the rest (stopped workers, earlier processes of a restarted one)
    // folded, newest heartbeat first, their recent runs read only once unfolded.
    const newest = (a, b) => String(b.lastHeartbeat ?? "").localeCompare(String(a.lastHeartbeat ?? ""));
    const live = agents.filter((a) => a.live).sort(newest);
    const gone = agents.filter((a) => !a.live).sort(newest);
    const folded = gone.length
      ? h("details", { class: "gone-agents", "data-gone": String(gone.length) },
        h("summary", {}, `${gone.length} agent${gone.length === 1 ? "" : "s"} not live`),
        h("div", { class: "cards" }))
      : null;
    if (folded) {
      folded.addEventListener("toggle", () => {
        const cards = folded.querySelector(".cards");
        if (folded.open && !cards.childElementCount) cards.append(...gone.map((agent) => agentCard(agent, signal)));
      });
    }
    replace(body,
      h("p", { class: "small muted" }, `${agents.length} agent${agents.length === 1 ? "" : "s"}, ${live.length} live. `,
        "Live: a heartbeat within the last few heartbeat periods."),
      live.length
        ? h("div", { class: "cards" }, live.map((agent) => agentCard(agent, signal)))
        : notice("No agent is live: start one with `benchstack worker inference`."),
      folded);
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
  }
}

function pairs(list) {
  return h("dl", { class: "pairs" }, list.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v === undefined || v === null || v === "" ? DASH : v)]));
}

function agentCard(agent, signal) {
  const hw = agent.hardware ?? {};
  const cpu = hw.cpu ?? {};
  const sw = agent.software ?? {};
  const gpus = (hw.gpus ?? []).map((g) => g.name ?? JSON.stringify(g)).join(", ");
  const frameworks = Object.entries(sw.frameworks ?? {}).map(([k, v]) => `${k} ${v}`).join(", ");
  const settings = Object.entries(agent.settings ?? {}).map(([k, v]) => `${k}=${v}`).join(", ");
  const recent = h("div", { class: "recent" }, h("p", { class: "small muted" }, "Loading your recent evaluations on it…"));
  const titleId = `agent-${agent.id.replace(/[^\w-]/g, "_")}`;
  const liveness = h("span", { class: `badge tone-${agent.live ? "good" : "bad"}`, "data-live": agent.live ? "yes" : "no" },
    agent.live ? "LIVE" : "NOT LIVE");
  loadRecent(agent.id, recent, signal);
  return h("section", { class: "card agent", "aria-labelledby": titleId, "data-agent": agent.id },
    h("h2", { id: titleId }, `${agent.framework} ${agent.frameworkVersion} on ${agent.device} `, liveness),
    pairs([
      ["Agent id", h("code", {}, agent.id)],
      ["Host", agent.hostname],
      ["Queue", h("code", {}, agent.queue)],
      ["CPU", cpu.model ? `${cpu.model} (${cpu.physical_cores ?? "?"} cores, ${cpu.logical_cores ?? "?"} threads)` : undefined],
      ["Memory", bytes(hw.memory_bytes)],
      ["GPUs", gpus || "none"],
      ["OS", sw.os],
      ["Python", sw.python],
      ["Frameworks", frameworks],
      ["benchstack", sw.benchstack],
      ["Settings", settings],
      ["Started", when(agent.startedAt)],
      ["Last heartbeat", when(agent.lastHeartbeat)],
    ]),
    h("h3", {}, "Your recent evaluations on it"),
    recent);
}

async function loadRecent(agentId, slot, signal) {
  try {
    const page = (await gql(AGENT_RUNS, { agent: agentId, first: RECENT })).evaluations;
    if (signal.aborted) return;
    if (!page.items.length) {
      replace(slot, h("p", { class: "small muted" }, "None of yours yet."));
      return;
    }
    replace(slot,
      h("ul", { class: "recent-runs" }, page.items.map((e) => {
        const run = latestRun(e);
        return h("li", { "data-id": e.id },
          h("a", { href: `#/evaluations/${e.id}` }, `${e.modelName} ${e.modelVersion} · ${shortId(e.id)}`), " ",
          stateBadge(e.state), " ", scenarioName(e.scenario), `, batch ${e.batchSize}: `,
          run?.samplesPerSecond ? `${number(run.samplesPerSecond, 1)} samples/s ` : "",
          verdictBadge(run?.validity, "LoadGen validity"), " ", verdictBadge(stability(run) ?? run?.stability, "stability"),
          busyBadge(run) ? [" ", busyBadge(run)] : null);
      })),
      page.totalCount > page.items.length
        ? h("p", { class: "small muted" }, `The latest ${page.items.length} of ${page.totalCount}.`)
        : null);
  } catch (err) {
    if (!signal.aborted) replace(slot, notice(err.message, "error"));
  }
}
