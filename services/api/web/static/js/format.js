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
