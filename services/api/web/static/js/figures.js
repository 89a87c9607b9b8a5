// A run's figures as the one rule gives them (GraphQL Run.shownFigures, built by
// services/core/shown_figures.py): each with its interval and verdicts, a busy host
// included; an Offline latency is never among them. Pages show a figure from here or not
// at all, and a figure of a busy run always carries BUSY beside it.

import { h } from "./dom.js";
import { DASH, number } from "./format.js";

// The GraphQL selection every page asks for with a run.
export const SHOWN_FIGURES = "shownFigures { name label value unit low high intervalNote validity stability busy busyNote }";

export function shownFigure(run, name) {
  return run?.shownFigures?.find((f) => f.name === name) ?? null;
}

// The host verdict of a run: any figure carries it (they all share the run's host).
export function busyOf(run) {
  const figure = run?.shownFigures?.[0];
  return figure ? { busy: figure.busy, note: figure.busyNote } : { busy: null, note: "" };
}

// "BUSY" with how busy as its title, or nothing for a run that had its host to itself.
export function busyBadge(figureOrRun) {
  const figure = figureOrRun?.shownFigures ? figureOrRun.shownFigures[0] : figureOrRun;
  if (!figure?.busy) return null;
  return h("span", { class: "badge tone-bad", "data-busy": "", title: `host busy: ${figure.busyNote}` }, "BUSY");
}

// One figure as a table cell's content: its value and BUSY where the host was busy;
// a dash where the rule shows none (not measured, or an Offline latency).
export function figureCell(run, name, digits) {
  const figure = shownFigure(run, name);
  if (!figure) return DASH;
  return [number(figure.value, digits), figure.busy ? [" ", busyBadge(figure)] : null];
}

// "95 % [low, high]" or null where the figure has no interval (intervalNote says why).
export function figureInterval(figure, digits) {
  if (figure?.low === null || figure?.low === undefined || figure?.high === null) return null;
  return `[${number(figure.low, digits)}, ${number(figure.high, digits)}]`;
}
