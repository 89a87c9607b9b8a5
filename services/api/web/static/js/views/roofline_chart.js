// A profiled run's roofline: every layer placed by arithmetic intensity (FLOPs per byte
// moved) and achieved GFLOP/s, under the roofs of this machine's measured peaks (a GEMM
// and a copy probe run with the profile). Below the ridge a layer is memory-bound, above
// it compute-bound; the gap to the roof is what is left to gain.

import { h } from "../dom.js";
import { SERIES, chartBox, plot } from "../charts.js";
import { number } from "../format.js";
import { notice } from "../widgets.js";

// ``fill(...children)`` puts the card's content in place; the chart is drawn after, once
// its box is in the page.
export function drawRoofline(roofline, fill) {
  if (!roofline || !roofline.points.length) {
    fill(notice("No roofline: it is drawn for torch models profiled at FRAMEWORK or deeper.", "info"));
    return;
  }
  const { peaks, points } = roofline;
  const box = chartBox("roofline", `Roofline of ${points.length} layers against ${number(peaks.gflops, 1)} GFLOP/s and ${number(peaks.gbps, 1)} GB/s`);
  const caption = h("p", { class: "small muted", "data-roofline-peaks": `${peaks.gflops} ${peaks.gbps}` },
    `Peaks measured on ${peaks.device} with ${peaks.threads} threads: ${number(peaks.gflops, 1)} GFLOP/s (IQR ${number(peaks.gflopsIqr, 1)}) and ${number(peaks.gbps, 1)} GB/s (IQR ${number(peaks.gbpsIqr, 1)}); ${peaks.method}. `,
    `Every layer is placed (${points.length}${roofline.unplaced.length ? `; not placed: ${roofline.unplaced.join(", ")}` : ""}); hollow markers: FLOPs estimated as one per output element. The memory roof is main memory's (a 64 MiB copy): a layer whose tensors stay in cache can sit above it. ${roofline.method}.`);
  fill(box, caption);
  draw(box, roofline);
}

function draw(box, { peaks, points, ridgeFlopsPerByte }) {
  const intensities = points.map((p) => p.intensity);
  const low = Math.min(...intensities, ridgeFlopsPerByte ?? 1) / 2;
  const high = Math.max(...intensities, ridgeFlopsPerByte ?? 1) * 2;
  const ridge = ridgeFlopsPerByte ?? high;
  const roof = {
    type: "scatter", mode: "lines", name: "roof (measured peaks)",
    x: [low, ridge, high], y: [low * peaks.gbps, peaks.gflops, peaks.gflops],
    line: { color: SERIES[5] }, hoverinfo: "skip",
  };
  const byBound = ["memory", "compute"].map((bound, index) => {
    const mine = points.filter((p) => p.bound === bound);
    return {
      type: "scatter", mode: "markers", name: `${bound}-bound layers`,
      x: mine.map((p) => p.intensity), y: mine.map((p) => p.gflops),
      text: mine.map((p) => `${p.name} (${p.type}${p.own ? ", own work" : ""})`),
      customdata: mine.map((p) => [p.medianMs, p.gbps, p.ofRoof === null ? NaN : p.ofRoof * 100]),
      marker: {
        color: SERIES[index], size: 9,
        symbol: mine.map((p) => (p.flopsEstimated ? "circle-open" : "circle")),
      },
      hovertemplate: "%{text}<br>%{x:.2f} FLOP/B, %{y:.2f} GFLOP/s, %{customdata[1]:.2f} GB/s<br>median %{customdata[0]:.4f} ms, %{customdata[2]:.0f} % of its roof<extra></extra>",
    };
  });
  plot(box, [roof, ...byBound], {
    showlegend: true,
    xaxis: { title: { text: "Arithmetic intensity (FLOP per byte moved)" }, type: "log" },
    yaxis: { title: { text: "Achieved GFLOP/s" }, type: "log" },
    margin: { l: 70, r: 20, t: 36, b: 56 },
  });
}
