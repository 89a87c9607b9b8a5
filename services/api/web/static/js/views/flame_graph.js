// A run's flame graph (icicle) from GraphQL Run.traceFlame: each thread's spans nested by
// containment and summed per stack path by the API (services/api/trace_tree.py), drawn as
// SVG rects, one per path: width = total time over its calls, depth = nesting. It opens on
// the node holding the measured iterations (its ancestors full width above it); a click
// zooms on a node, "Whole trace" shows every path. Each rect's <title> gives its name,
// level (span category), thread, calls, total and self time and the median call with its
// IQR.

import { h } from "../dom.js";
import { SERIES, timeText } from "../charts.js";
import { notice } from "../widgets.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 20;
const CHAR_PX = 6.6; // about one character of the 11 px label font
const CATEGORY_ORDER = ["stack", "request", "step", "pass", "model", "module", "layer", "own", "library-layer", "library", "gpu"];

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== null && value !== undefined) el.setAttribute(key, String(value));
  for (const child of children) if (child !== null && child !== undefined) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

function colourOf(category) {
  const index = CATEGORY_ORDER.indexOf(category);
  return SERIES[(index < 0 ? CATEGORY_ORDER.length : index) % SERIES.length];
}

export function titleOf(node) {
  return `${node.name}\nlevel ${node.category || "span"}, ${node.thread}\n` +
    `total ${timeText(node.totalMs)} over ${node.calls} call${node.calls === 1 ? "" : "s"}, self ${timeText(node.selfMs)}\n` +
    `median call ${timeText(node.medianMs)} (IQR ${timeText(node.iqrMs)})`;
}

function label(name, width) {
  const fits = Math.floor((width - 6) / CHAR_PX);
  if (fits < 3) return null;
  return name.length <= fits ? name : `${name.slice(0, fits - 1)}…`;
}

// Where each shown node lies: {node, x, width, depth} for the view rooted at focus (null:
// the whole trace).
function layout(nodes, children, focus, width) {
  const placed = [];
  const place = (node, x, scale) => {
    const w = node.totalMs * scale;
    placed.push({ node, x, width: w });
    let at = x;
    for (const child of children.get(node.id) ?? []) {
      place(child, at, scale);
      at += child.totalMs * scale;
    }
  };
  if (focus === null) {
    const roots = children.get(null) ?? [];
    const total = roots.reduce((sum, n) => sum + n.totalMs, 0) || 1;
    let at = 0;
    for (const root of roots) {
      place(root, at, width / total);
      at += root.totalMs * (width / total);
    }
    return placed;
  }
  const byId = new Map(nodes.map((n) => [n.id, n]));
  // Ancestors: full width above the focused node (they hold it).
  for (let up = byId.get(focus.parent); up; up = byId.get(up.parent)) placed.push({ node: up, x: 0, width, ancestor: true });
  place(focus, 0, width / (focus.totalMs || 1));
  return placed;
}

export function drawFlame(flame, fill) {
  if (!flame) {
    fill(notice("This run stored no trace.json.", "info"));
    return;
  }
  if (!flame.nodes.length) {
    fill(notice(flame.note, "info"));
    return;
  }
  const nodes = flame.nodes;
  const children = new Map();
  for (const node of nodes) {
    const list = children.get(node.parent) ?? [];
    list.push(node);
    children.set(node.parent, list);
  }
  for (const list of children.values()) list.sort((a, b) => a.firstStartMs - b.firstStartMs || a.id - b.id);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const iterations = flame.focusId === null ? null : byId.get(flame.focusId) ?? null;
  const depth = Math.max(...nodes.map((n) => n.depth)) + 1;
  const holder = h("div", { class: "flame", "data-chart": "flame-graph", role: "img", "aria-label": `Flame graph of ${nodes.length} stack paths` });
  const caption = h("p", { class: "small muted", "data-flame-caption": "" });

  const draw = (focus, view) => {
    const width = Math.max(holder.clientWidth || 0, 600);
    const placed = layout(nodes, children, focus, width);
    const chart = svg("svg", { width, height: depth * ROW + 2, viewBox: `0 0 ${width} ${depth * ROW + 2}`, "data-view": view, "data-rects": placed.length });
    for (const { node, x, width: w } of placed) {
      const y = node.depth * ROW;
      const group = svg("g", { "data-node": node.id, class: "flame-node" });
      group.append(svg("rect", { x: x.toFixed(2), y, width: Math.max(w, 0.5).toFixed(2), height: ROW - 2, fill: colourOf(node.category), rx: 2 }),
        svg("title", {}, titleOf(node)));
      const text = label(node.name, w);
      if (text) group.append(svg("text", { x: (x + 3).toFixed(2), y: y + ROW - 7, class: "flame-label" }, text));
      group.addEventListener("click", () => draw(node, String(node.id)));
      chart.append(group);
    }
    holder.replaceChildren(chart);
    holder.dataset.view = view;
    holder.dataset.rendered = "yes";
    caption.textContent = focus
      ? `Showing ${focus.name} (${timeText(focus.totalMs)} over ${focus.calls} call${focus.calls === 1 ? "" : "s"}) and what it called; the spans above it hold it.`
      : `Showing every stack path of the trace, from the submission (the queue wait is the evaluation's self time).`;
  };
  const controls = h("div", { class: "chart-controls" },
    iterations ? h("button", { type: "button", class: "secondary", "data-view-button": "iterations", onclick: () => draw(iterations, "iterations") }, "Iterations") : null,
    h("button", { type: "button", class: "secondary", "data-view-button": "whole", onclick: () => draw(null, "whole") }, "Whole trace"));
  fill(controls, holder, caption,
    h("p", { class: "small muted", "data-sampling": flame.truncated ? "truncated" : "all" },
      `Each thread's spans nested by time, summed per stack path over every call (the iterations of a pass add up): width is total time, `,
      `colour the level (step, pass, model, layer, library call…). Hover for calls, total and self time and the median call with its IQR; click to zoom. `,
      `Drawn: ${flame.note}.`));
  draw(iterations, iterations ? "iterations" : "whole");
}
