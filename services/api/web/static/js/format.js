// Formatting of figures and states; "—" wherever a value is missing, never a made-up 0.

export const DASH = "—";
const FINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

export function isFinal(state) {
  return FINAL.has(state);
}

export function number(value, digits = 1) {
  if (value === null || value === undefined || Number.isNaN(value)) return DASH;
  return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function shortId(id) {
  return id ? id.slice(0, 8) : DASH;
}

export function when(iso) {
  if (!iso) return DASH;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function bytes(count) {
  if (!count) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = count;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${number(value, 1)} ${units[unit]}`;
}

export function scenarioName(scenario) {
  if (!scenario) return DASH;
  return typeof scenario === "string" ? scenario : scenario.scenario ?? DASH;
}

export function metric(run, name) {
  return run?.metrics?.find((m) => m.name === name) ?? null;
}

export function stability(run) {
  return run?.report?.stability?.verdict ?? null;
}

export function latestRun(evaluation) {
  const runs = evaluation?.runs ?? [];
  return runs.length ? runs[runs.length - 1] : null;
}

// A metric's 95 % interval in the run's confidence (GraphQL Confidence), or null.
const INTERVAL_KEYS = {
  samples_per_second: "samplesPerSecond",
  latency_mean: "latencyMean",
  latency_p50: "latencyP50",
  latency_p90: "latencyP90",
  latency_p99: "latencyP99",
};

export function intervalOf(run, name) {
  const key = INTERVAL_KEYS[name];
  return key && run?.confidence ? run.confidence[key] ?? null : null;
}

// "[38.4, 42.0]" for an interval given; null where none is (its reason says why).
export function intervalText(interval, digits = 1) {
  if (!interval || interval.low === null || interval.low === undefined) return null;
  return `[${number(interval.low, digits)}, ${number(interval.high, digits)}]`;
}

// The interval a verdict may use: none for a run LoadGen did not judge VALID, whatever
// was computed, as in the CLI's compare (services/cli/comparison._interval).
export function judgedIntervalOf(run, name) {
  if (run?.validity && run.validity !== "VALID") {
    return { low: null, high: null, reason: `${run.validity}: LoadGen did not judge it` };
  }
  return intervalOf(run, name);
}

// Two systems' figure, as the CLI's compare judges it (services/core/confidence.differ).
export function differVerdict(a, b) {
  if (!intervalText(a) || !intervalText(b)) {
    const missing = !intervalText(a) ? a : b;
    return ["cannot say", missing?.reason || "no interval"];
  }
  if (a.high < b.low || b.high < a.low) return ["differ", "the intervals do not overlap"];
  return ["within their intervals", "the intervals overlap"];
}

// The API's advice names the CLI's flags (its messages serve both); on the page, the form
// field a user would change instead. Flags the form lacks stay as they are.
const FORM_FIELDS = {
  "--duration": "Duration (s)",
  "--target-qps": "Target QPS",
  "--batch-size": "Batch size",
  "--samples-per-query": "Samples per query",
  "--latency-bound-ms": "Latency bound (ms)",
  "--start-qps": "Start QPS",
  "--samples": "Samples",
};

export function inFormWords(text) {
  return String(text ?? "").replace(/--[a-z][a-z-]*/g, (flag) => (FORM_FIELDS[flag] ? `the form's “${FORM_FIELDS[flag]}”` : flag));
}

// A group's own page, by the kind its members record (Evaluation.groupKind): sweeps,
// find-peak searches, repeats and training scalings have pages of their own; a fan-out
// (no kind) and an accuracy-performance pair are compared.
const GROUP_PAGES = {
  sweep: ["#/sweeps/", "its sweep's curve"],
  "find-peak": ["#/find-peak/", "its find-peak search"],
  repeats: ["#/repeats/", "its repeats"],
  "training-scaling": ["#/training-scaling/", "its scaling across world sizes"],
};

export function groupPage(groupId, groupKind) {
  const page = GROUP_PAGES[groupKind ?? ""];
  const id = encodeURIComponent(groupId);
  if (page) return { href: `${page[0]}${id}`, label: page[1] };
  const label = groupKind === "accuracy-performance-pair" ? "compare its accuracy and performance passes" : "compare its fan-out";
  return { href: `#/compare?group=${id}`, label };
}
