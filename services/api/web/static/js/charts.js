// Charts with plotly.js, served by the API from the plotly package (/static/vendor/):
// loaded on the first chart only, so pages without one never fetch its 4.8 MB.
// Each chart element records what it plotted in data-points (and plotly keeps its traces
// on the element), so what a chart shows can be checked against the data behind it.

import { h } from "./dom.js";

const PLOTLY_URL = "/static/vendor/plotly.min.js";
// The bundled maplibre (map traces, unused here) injects its CSS as an inline <style> when
// the bundle loads, unless an element with this id exists; the page's policy would refuse
// it with a console error. The id is a hash of that CSS, so a plotly upgrade may change
// it: the browser tests fail on any console error and say so.
const MAPLIBRE_STYLE_ID = "9f215cf04c5486422605d13261cb87401f4e7763b6296af81e98efbc0130da53";
let loading = null;

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading) {
    if (!document.getElementById(MAPLIBRE_STYLE_ID)) {
      document.head.append(h("meta", { id: MAPLIBRE_STYLE_ID, name: "maplibre-css-not-injected" }));
    }
    loading = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = PLOTLY_URL;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        loading = null;
        reject(new Error(`The chart library did not load from ${PLOTLY_URL}.`));
      };
      document.head.append(script);
    });
  }
  return loading;
}

// A series palette that stays readable on light and dark backgrounds; lines also differ
// in dash, so colour is never the only way to tell series apart.
export const SERIES = ["#2456c8", "#d1495b", "#2a9d8f", "#e9a23b", "#7b4fc9", "#5b6475", "#c2569b", "#3f8f3f"];
export const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];

function cssVar(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

function baseLayout(layout) {
  const text = cssVar("--text", "#1c2330");
  const grid = cssVar("--border", "#d8dce3");
  const axis = (extra) => ({ gridcolor: grid, zerolinecolor: grid, linecolor: grid, automargin: true, ...extra });
  return {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: getComputedStyle(document.body).fontFamily, size: 12, color: text },
    margin: { l: 60, r: 16, t: layout.showlegend ? 36 : 12, b: 48 },
    height: 300,
    showlegend: false,
    // Above the plot, so it never sits on the x axis' title.
    legend: { orientation: "h", x: 0, y: 1.02, xanchor: "left", yanchor: "bottom" },
    ...layout,
    xaxis: axis(layout.xaxis),
    yaxis: axis(layout.yaxis),
    ...(layout.yaxis2 ? { yaxis2: axis(layout.yaxis2) } : {}),
  };
}

// An empty chart element with its accessible name; plot() fills it.
export function chartBox(name, label) {
  return h("div", { class: "chart", "data-chart": name, role: "img", "aria-label": label });
}

// Draws traces into box; returns the number of points plotted (also in data-points).
export async function plot(box, traces, layout = {}) {
  const Plotly = await loadPlotly();
  if (!box.isConnected) return 0; // the view was left while the library loaded
  await Plotly.newPlot(box, traces, baseLayout(layout), {
    // The mode bar styles itself with inline <style> elements the page's policy refuses;
    // drag to zoom and double-click to reset still work without it.
    displayModeBar: false,
    responsive: true,
  });
  const points = traces.reduce((sum, t) => sum + (t.x?.length ?? 0), 0);
  box.dataset.points = String(points);
  box.dataset.rendered = "yes";
  return points;
}

// The empirical CDF of one latency sample: a step line through every (latency, share).
export function cdfTrace(sample, name, index = 0) {
  return {
    type: "scatter",
    mode: "lines",
    line: { shape: "hv", color: SERIES[index % SERIES.length], dash: DASHES[index % DASHES.length], width: 2 },
    name,
    x: sample.latenciesMs,
    y: sample.cumulativeFractions.map((f) => f * 100),
    hovertemplate: "%{x:.3f} ms: %{y:.2f} % of samples at or below<extra>" + name + "</extra>",
  };
}

export const CDF_AXES = {
  xaxis: { title: { text: "Latency (ms)" } },
  yaxis: { title: { text: "Samples at or below (%)" }, range: [0, 100.5] },
};

// Plotly error bars from 95 % intervals ({estimate, low, high}; low and high null when
// none could be given): a bar only where the interval exists. Its arms are the interval's
// distances from its own estimate, so a latency interval on the SUT's clock keeps its
// width when drawn at LoadGen's figure (the two clocks differ by LoadGen's overhead).
export function intervalBars(values, intervals) {
  const given = (i) => intervals[i] && intervals[i].low != null && intervals[i].high != null && values[i] != null;
  const centre = (i) => intervals[i].estimate ?? values[i];
  return {
    type: "data",
    visible: true,
    symmetric: false,
    array: values.map((v, i) => (given(i) ? Math.max(0, intervals[i].high - centre(i)) : null)),
    arrayminus: values.map((v, i) => (given(i) ? Math.max(0, centre(i) - intervals[i].low) : null)),
    color: "#1f2937",
    thickness: 1.5,
    width: 5,
  };
}

// Times read in µs, ms or s with plain numbers: plotly's own ticks on a millisecond axis
// read "2k" (thousands of ms), so time axes get their ticks from here.
const TIME_UNITS = [["s", 1000], ["ms", 1], ["µs", 0.001]];

function niceStep(span, count) {
  const raw = span / Math.max(count, 1);
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
}

// A time in ms as text: the unit by its size (by the step for 0), enough digits for step.
export function timeText(ms, stepMs = Math.abs(ms) || 1) {
  const size = Math.abs(ms) || stepMs;
  const [name, scale] = TIME_UNITS.find(([, s]) => size >= s) ?? TIME_UNITS[2];
  const digits = Math.min(6, Math.max(0, Math.ceil(-Math.log10(stepMs / scale) - 1e-9)));
  const value = (ms / scale).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${value} ${name}`;
}

// Tick values and labels for a time axis (ms) over [low, high].
export function timeTicks(low, high, count = 7) {
  if (!(high > low)) return { tickvals: [low], ticktext: [timeText(low)] };
  const step = niceStep(high - low, count);
  const tickvals = [];
  for (let t = Math.ceil(low / step) * step; t <= high + step * 1e-9; t += step) tickvals.push(t);
  return { tickvals, ticktext: tickvals.map((t) => timeText(Math.abs(t) < step * 1e-9 ? 0 : t, step)) };
}
