// The run page's section of a workload that declares its own (Workload.web_view, a JS
// module in the workload's folder): the API lists them at /workloads/views, and the page
// imports the module of the run's workload. Each exports sections(evaluation, run, page):
// the page's cards, in order; `page` lends the page's element builder (h), its cards
// (card, definitions, environment, metricsTable, logs, notice) and the view's abort signal.

let listed = null;

async function views() {
  listed ??= fetch("/workloads/views", { headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : {}))
    .catch(() => {
      listed = null; // asked again on the next page
      return {};
    });
  return listed;
}

// The module of the workload's own section, or null: the page's LoadGen sections.
export async function workloadView(workload) {
  if (!workload) return null;
  const url = (await views())[workload];
  return url ? import(url) : null;
}
