// A run's operators and kernels from GraphQL Run.operators: the rows `benchstack profile`
// prints (profiling/analysis.library_ops and profiling/layer_ops, computed once in the
// worker), never re-aggregated here. A header click sorts its column.

import { h } from "../dom.js";
import { DASH, number } from "../format.js";
import { notice } from "../widgets.js";

const KIND = { library: "operator", gpu: "kernel" };

function ms(value) {
  return value === null || value === undefined ? DASH : number(value, 3);
}

// A table whose columns sort on a click: columns are {key, label, text, numeric}.
function sortable(name, columns, rows) {
  const body = h("tbody");
  const state = { key: null, descending: true };
  const heads = columns.map((column) => h("th", { scope: "col", "data-key": column.key, class: column.numeric ? "num" : null },
    h("button", { type: "button", class: "sort", onclick: () => sortBy(column.key) }, column.label)));
  const render = (ordered) => body.replaceChildren(...ordered.map((row) => h("tr", { "data-name": row.name ?? "" },
    columns.map((c) => h(c.key === columns[0].key ? "th" : "td", { scope: c.key === columns[0].key ? "row" : null, class: c.numeric ? "num" : null, "data-key": c.key }, c.text(row)))))); 
  function sortBy(key) {
    state.descending = state.key === key ? !state.descending : true;
    state.key = key;
    const column = columns.find((c) => c.key === key);
    const value = (row) => row[key] ?? (column.numeric ? -Infinity : "");
    const ordered = [...rows].sort((a, b) => {
      const [x, y] = [value(a), value(b)];
      const order = column.numeric ? x - y : String(x).localeCompare(String(y));
      return state.descending ? -order : order;
    });
    for (const th of heads) th.setAttribute("aria-sort", th.dataset.key === key ? (state.descending ? "descending" : "ascending") : "none");
    render(ordered);
  }
  render(rows);
  return h("div", { class: "table-wrap" }, h("table", { class: "operator-table", "data-table": name }, h("thead", {}, h("tr", {}, heads)), body));
}

export function drawOperators(operators, fill) {
  const rows = operators?.operators ?? [];
  const perLayer = operators?.perLayer ?? [];
  if (!rows.length && !perLayer.length) {
    fill(notice("No operator table: operators and kernels are traced at the LIBRARY level (and FULL), whose pass this run did not run.", "info"));
    return;
  }
  const per = operators.iterations ? ` over the pass's ${operators.iterations} iterations` : "";
  const opColumns = [
    { key: "name", label: "Operator / kernel", text: (r) => h("span", { class: "op-name", title: r.name }, r.name) },
    { key: "kind", label: "Kind", text: (r) => KIND[r.kind] ?? r.kind },
    { key: "calls", label: "Calls / iteration", numeric: true, text: (r) => number(r.calls, 1) },
    { key: "totalMs", label: "Total ms", numeric: true, text: (r) => ms(r.totalMs) },
    { key: "medianMs", label: "Median ms / iteration", numeric: true, text: (r) => ms(r.medianMs) },
    { key: "iqrMs", label: "IQR ms", numeric: true, text: (r) => ms(r.iqrMs) },
    { key: "percent", label: "% of model", numeric: true, text: (r) => (r.percent === null || r.percent === undefined ? DASH : number(r.percent, 1)) },
  ];
  const layerRows = perLayer.flatMap((entry) => entry.ops.map((op) => ({ ...op, layer: entry.layer })));
  const layerColumns = [
    { key: "layer", label: "Layer", text: (r) => r.layer },
    { key: "name", label: "Operator / kernel", text: (r) => h("span", { class: "op-name", title: r.name }, r.name) },
    { key: "kind", label: "Kind", text: (r) => KIND[r.kind] ?? r.kind },
    { key: "calls", label: "Calls / iteration", numeric: true, text: (r) => number(r.calls, 1) },
    { key: "medianMs", label: "Median ms / iteration", numeric: true, text: (r) => ms(r.medianMs) },
    { key: "iqrMs", label: "IQR ms", numeric: true, text: (r) => ms(r.iqrMs) },
  ];
  fill(
    rows.length ? h("h3", {}, "Slowest operators and kernels (LIBRARY pass)") : null,
    rows.length ? h("p", { class: "small muted" },
      `As benchstack profile prints them: each operator's time in one iteration, the median${per} with its interquartile range, `,
      "each kind its own top rows. An operator's time holds the operators it calls (aten::conv2d holds aten::convolution), so shares overlap. Click a header to sort.") : null,
    rows.length ? sortable("operators", opColumns, rows) : null,
    layerRows.length ? h("h3", {}, `Operators and kernels per layer (${operators.perLayerSource || "LIBRARY pass"})`) : null,
    layerRows.length ? h("p", { class: "small muted" }, `The slowest layers' own outermost operators (and the kernels they launched), median per iteration${per} with its IQR.`) : null,
    layerRows.length ? sortable("layer-operators", layerColumns, layerRows) : null,
  );
}
