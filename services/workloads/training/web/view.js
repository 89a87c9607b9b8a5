// The training workload's section of the run page (Workload.web_view): what it trained
// with (not a LoadGen scenario), images/s with its 95 % interval beside the host's state,
// and charts of its step times and progress lines; no validity windows or latency charts.

import { trainingChartCards, trainingHeadline, trainingOverview } from "/static/js/views/training.js";

export function sections(evaluation, run, page) {
  const shown = [trainingOverview(evaluation, run)];
  if (run?.training) {
    shown.push(trainingHeadline(run), ...trainingChartCards(evaluation, run, page.signal));
    shown.push(page.environment(run), page.metricsTable(run), page.logs(run));
  }
  return shown;
}
