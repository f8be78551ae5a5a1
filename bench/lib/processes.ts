import { type ChildProcess, spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { repositoryRoot } from "../../test/support/processes.ts";

// The processes of a benchmark: each one is `node` itself (never a pnpm or tsx wrapper), so its pid
// is the process whose RSS and CPU time are measured, and a SIGTERM reaches its shutdown handler.
export { freePort, repositoryRoot, waitForHttp } from "../../test/support/processes.ts";

export interface NodeProcess {
  name: string;
  pid: number;
  child: ChildProcess;
  /** Where stdout and stderr go. */
  logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<NodeProcess>();

/**
 * Starts `node [nodeArgs] <script>` from the repository root (with `--import tsx` for TypeScript),
 * its output appended to `<logDir>/<name>.log`.
 */
export function startNode(
  name: string,
  script: string,
  options: {
    env?: Record<string, string>;
    nodeArgs?: string[];
    logDir: string;
    /** A script that ends by itself once it has done its work: its exit is not reported as early. */
    runsToEnd?: boolean;
  },
): NodeProcess {
  const logFile = join(options.logDir, `${name}.log`);
  const out = openSync(logFile, "a");
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), ...(script.endsWith(".ts") ? ["--import", "tsx"] : []), script],
    {
      cwd: repositoryRoot,
      // No .env of the repository: the benchmark's settings are only what it passes.
      env: { ...process.env, PUNCTUAL_ENV_FILE: "none", ...options.env },
      stdio: ["ignore", out, out],
    },
  );
  if (child.pid === undefined) throw new Error(`${name} did not start`);
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const started: NodeProcess = {
    name,
    pid: child.pid,
    child,
    logFile,
    async stop(graceMs = 20_000) {
      running.delete(started);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(started);
  child.once("exit", (code, signal) => {
    if (running.has(started) && !options.runsToEnd)
      process.stderr.write(`${name} exited early (${code ?? signal}); see ${logFile}\n`);
  });
  return started;
}

/** Stops every process still running (the harness's `finally`). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop(5_000)));
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Resident set size of a process in bytes (VmRSS of /proc/<pid>/status), or 0 once it is gone. */
export function rssBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, 10 ms resolution). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Samples the RSS of some processes every `intervalMs` and keeps each one's peak. */
export function sampleRss(processes: NodeProcess[], intervalMs = 100) {
  const peaks = new Map<string, number>();
  const sample = () => {
    for (const p of processes) peaks.set(p.name, Math.max(peaks.get(p.name) ?? 0, rssBytes(p.pid)));
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    /** Stops sampling; returns the peak RSS in bytes by process name. */
    stop(): Map<string, number> {
      clearInterval(timer);
      sample();
      return peaks;
    },
  };
}
