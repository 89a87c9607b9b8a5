// A data-parallel training scaling (#/training-scaling/<group>): one point per world size N,
// throughput N x batch / rank 0's mean step time with its standard error, speedup and
// efficiency E(N) relative to the smallest N measured, drawn against the ideal E = 1.

import { gql } from "../api.js";
import { h, replace } from "../dom.js";
import { SERIES, chartBox, plot } from "../charts.js";
import { DASH, isFinal, number, shortId } from "../format.js";
import { TRAINING_SCALING } from "../queries.js";
import { backToList, notice, openView, stateBadge } from "../widgets.js";

const POLL_MS = 2000;

export function renderTrainingScaling(main, signal, id) {
  const { heading, signedIn } = openView(main, `Training scaling ${shortId(id)}`, backToList());
  if (!signedIn) return heading;
  const body = h("div", { class: "training-scaling" }, notice("Loading the scaling…"));
  main.append(body);
  refresh(body, signal, id, "");
  return heading;
}

async function refresh(body, signal, id, drawn) {
  let scaling;
  try {
    scaling = (await gql(TRAINING_SCALING, { id })).trainingScaling;
  } catch (err) {
    if (!signal.aborted) replace(body, notice(err.message, "error"));
    return;
  }
  if (signal.aborted) return;
  if (!scaling) {
    replace(body, notice(`No training scaling ${id} is visible to you.`, "error"));
    return;
  }
  const state = JSON.stringify(scaling);
  if (state !== drawn) render(body, scaling);
  const pending = scaling.state === "running" || scaling.points.some((p) => !isFinal(p.state));
  if (pending) setTimeout(() => signal.aborted || refresh(body, signal, id, state), POLL_MS);
}

function render(body, scaling) {
  const measured = scaling.points.filter((p) => p.speedup !== null && p.speedup !== undefined);
  replace(body,
    h("p", { class: "small muted" },
      `World sizes ${scaling.worldSizes.join(", ")}; state ${scaling.state}.`,
      scaling.stopped ? h("span", { class: "error" }, ` Stopped: ${scaling.stopped}`) : null),
    table(scaling),
    chartCard(measured));
}

function table(scaling) {
  const head = ["Workers N", "State", "Images/s", "± s.e.", "Speedup", "E(N)", "Weights agree", "Ranks"];
  return h("section", { class: "card", "aria-labelledby": "scaling-table-title" },
    h("h2", { id: "scaling-table-title" }, "Points"),
    h("div", { class: "table-wrap" },
      h("table", { class: "compare-table scaling-points" },
        h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, scaling.points.map((p) =>
          h("tr", { "data-world-size": p.worldSize },
            h("th", { scope: "row" }, String(p.worldSize)),
            h("td", {}, stateBadge(p.state)),
            h("td", { class: "num" }, number(p.imagesPerSecond, 1)),
            h("td", { class: "num" }, number(p.standardError, 2)),
            h("td", { class: "num" }, number(p.speedup, 2)),
            h("td", { class: "num", "data-efficiency": p.efficiency ?? "" }, number(p.efficiency, 2)),
            h("td", {}, p.weightsAgree === null || p.weightsAgree === undefined ? DASH : p.weightsAgree ? "yes" : "NO"),
            h("td", {}, p.ranks.map((r) =>
              h("div", { "data-rank": r.rank },
                h("a", { href: `#/evaluations/${r.evaluation.id}` }, `rank ${r.rank}`), " ", stateBadge(r.evaluation.state),
                r.hostBusy ? [" ", h("span", { class: "badge tone-bad", title: "other processes kept this rank's host busy" }, "BUSY")] : null)))))))),
    h("p", { class: "small muted" },
      "Images/s = N × batch / rank 0's mean step time (± its delta-method standard error); speedup and ",
      "E(N) = speedup / (N / N₀) against the smallest world size N₀ measured. ",
      "BUSY beside a rank: other processes kept its host busy, so that point is not one to quote."));
}

function chartCard(measured) {
  const cardEl = h("section", { class: "card chart-card", "aria-labelledby": "scaling-chart-title" },
    h("h2", { id: "scaling-chart-title" }, "Speedup and efficiency E(N)"));
  if (!measured.length) {
    cardEl.append(notice("No world size is measured yet.", "info"));
    return cardEl;
  }
  const box = chartBox("training-scaling", `Speedup and efficiency at ${measured.length} world sizes`);
  cardEl.append(box, h("p", { class: "small muted" }, "Solid: speedup (left axis) against the ideal, dashed grey; dotted: E(N) (right axis), 1 is perfect scaling."));
  const sizes = measured.map((p) => p.worldSize);
  const base = sizes[0];
  plot(box, [
    {
      type: "scatter", mode: "lines+markers", name: "Speedup", x: sizes, y: measured.map((p) => p.speedup),
      line: { color: SERIES[0], width: 2 }, hovertemplate: "N=%{x}: speedup %{y:.2f}<extra></extra>",
    },
    {
      type: "scatter", mode: "lines", name: "Ideal", x: sizes, y: sizes.map((n) => n / base),
      line: { color: "#8a93a3", dash: "dash" }, hoverinfo: "skip",
    },
    {
      type: "scatter", mode: "lines+markers", name: "E(N)", x: sizes, y: measured.map((p) => p.efficiency), yaxis: "y2",
      line: { color: SERIES[1], dash: "dot", width: 2 }, hovertemplate: "N=%{x}: E %{y:.2f}<extra></extra>",
    },
  ], {
    showlegend: true,
    xaxis: { title: { text: "Workers N" }, tickvals: sizes },
    yaxis: { title: { text: "Speedup" }, rangemode: "tozero" },
    yaxis2: {
      title: { text: "Efficiency E(N)" }, overlaying: "y", side: "right", range: [0, 1.2], showgrid: false,
      tickmode: "array", tickvals: [0, 0.25, 0.5, 0.75, 1],
    },
    margin: { l: 60, r: 60, t: 36, b: 48 },
  }).then(() => {
    box.dataset.points = String(sizes.length);
  });
  return cardEl;
}
