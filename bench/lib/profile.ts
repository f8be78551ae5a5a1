import { readFileSync } from "node:fs";

// Reads a V8 CPU profile (`node --cpu-prof`) and sums self time by package and by function over a
// window of time. Profile timestamps are CLOCK_MONOTONIC microseconds, the clock of
// process.hrtime, so the harness can name the window in its own hrtime.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time in the window, ms, of which `busyMs` not idle. */
  windowMs: number;
  busyMs: number;
  byPackage: { name: string; ms: number }[];
  byFunction: { name: string; where: string; ms: number }[];
}

/** Which package a script belongs to: the last node_modules entry, a workspace folder, or Node. */
export function packageOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "native (V8, libuv and Node bindings)";
  if (url.startsWith("node:")) return "node (built-in JavaScript)";
  if (url.startsWith("wasm://")) return "WebAssembly";
  const modules = url.lastIndexOf("/node_modules/");
  if (modules >= 0) {
    const [first, second] = url.slice(modules + "/node_modules/".length).split("/");
    return first?.startsWith("@") ? `${first}/${second}` : (first ?? url);
  }
  const workspace = /\/(packages|services)\/([^/]+)\//.exec(url);
  if (workspace) return `@punctual/${workspace[2]}`;
  if (url.includes("/bench/")) return "bench";
  return url;
}

const shortPath = (url: string) =>
  url.replace(/^.*\/node_modules\//, "").replace(/^file:\/\/.*?\/(?=packages|services)/, "");

/** Self time within [fromUs, toUs) (monotonic µs), the `top` packages and functions. */
export function summarizeProfile(file: string, fromUs: number, toUs: number, top = 100): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfByNode = new Map<number, number>();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    // A sample stands for the time until the next one.
    t += profile.timeDeltas[i] ?? 0;
    if (t >= fromUs && t < toUs) selfByNode.set(id, (selfByNode.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  });

  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, { name: string; where: string; ms: number }>();
  let windowMs = 0;
  let busyMs = 0;
  for (const [id, us] of selfByNode) {
    const frame = nodes.get(id)?.callFrame;
    if (!frame) continue;
    const ms = us / 1000;
    windowMs += ms;
    if (frame.functionName === "(idle)") continue;
    busyMs += ms;
    const pkg = packageOf(frame.url, frame.functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + ms);
    const where = frame.url ? `${shortPath(frame.url)}:${frame.lineNumber + 1}` : "";
    const key = `${frame.functionName}@${where}`;
    const entry = byFunction.get(key) ?? { name: frame.functionName || "(anonymous)", where, ms: 0 };
    entry.ms += ms;
    byFunction.set(key, entry);
  }
  return {
    windowMs,
    busyMs,
    byPackage: [...byPackage]
      .map(([name, ms]) => ({ name, ms }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
    byFunction: [...byFunction.values()].sort((a, b) => b.ms - a.ms).slice(0, top),
  };
}
