import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../support/context.ts";
import {
  apiProcessEnv,
  freePort,
  repositoryRoot,
  type ServiceProcess,
  spawnProcess,
  startService,
  waitForHttp,
} from "../support/processes.ts";

// LOG_FORMAT=auto (the default): a person running `pnpm start` in a terminal reads lines of text; a
// container's log or a collector reading a pipe gets JSON. The terminal is a real one: the API runs
// under `script`, which gives it a pseudo-terminal as its stdout.
let context: TestContext;

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

async function apiEnvironment(): Promise<{ env: Record<string, string>; port: number }> {
  const port = await freePort();
  return {
    port,
    env: { ...apiProcessEnv(context.config, port), PUNCTUAL_ENV_FILE: "none" },
  };
}

/** The output's line that announces where the API listens. */
function listeningLine(output: string): string | undefined {
  return output.split(/\r?\n/).find((line) => line.includes("API listening on"));
}

describe("log lines", () => {
  it("are text at a terminal", async () => {
    const { env, port } = await apiEnvironment();
    // `script -qfec CMD /dev/null`: CMD's stdout is a pseudo-terminal whose output script copies to its own.
    const api: ServiceProcess = spawnProcess(
      "script",
      ["-qfec", `${process.execPath} --import tsx services/api/src/main.ts`, "/dev/null"],
      { cwd: repositoryRoot, env: { ...process.env, ...env }, detached: true },
    );
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
      await expect.poll(() => listeningLine(api.output())).toBeDefined();
      const line = listeningLine(api.output()) as string;
      expect(line.trimStart().startsWith("{")).toBe(false);
      expect(line).toMatch(/INFO.*API listening on http:\/\/127\.0\.0\.1:\d+/);
    } finally {
      await api.stop();
    }
  }, 120_000);

  it("are text with LOG_FORMAT=pretty into a pipe too, through the last line of a stop", async () => {
    const { env, port } = await apiEnvironment();
    const api = startService("api", { ...env, LOG_FORMAT: "pretty" });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
      await expect.poll(() => listeningLine(api.output())).toBeDefined();
      expect(listeningLine(api.output())).toMatch(/^\[[\d:.]+\] INFO \(api\): API listening on/);
      expect(await api.stop()).toBe(0);
      expect(api.output()).toMatch(/INFO \(api\): stopped/);
    } finally {
      await api.stop();
    }
  }, 120_000);

  it("are JSON into a pipe", async () => {
    const { env, port } = await apiEnvironment();
    const api = startService("api", env);
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);
      await expect.poll(() => listeningLine(api.output())).toBeDefined();
      const entry = JSON.parse(listeningLine(api.output()) as string) as { level: number; msg: string };
      expect(entry).toMatchObject({ level: 30, msg: expect.stringContaining("API listening on") });
    } finally {
      await api.stop();
    }
  }, 120_000);
});
