import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import {
  exitOf,
  refusesConnections,
  type ServiceProcess,
  signalService,
  startApiProcess,
} from "../../../test/support/processes.ts";

// Shutdown cut short (README, "Graceful shutdown"; packages/core/src/shutdown.ts): an API whose
// request in flight never completes exits 1 when SHUTDOWN_TIMEOUT_MS runs out, and a second signal
// exits 1 at once. The request in flight is a create whose body never finishes arriving (sent with
// `Expect: 100-continue`, so the test knows the server has taken it): it is never answered, and no
// event is stored. A real API process.

let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

/**
 * Starts an API with SHUTDOWN_TIMEOUT_MS, sends half of a create's body and never the rest, signals
 * SIGTERM once the listening socket is closed, then calls `then`. Checks that the create was never
 * answered and left no event; returns what `then` returned.
 */
async function withUnfinishedRequest<T>(
  shutdownTimeoutMs: number,
  then: (api: ServiceProcess, exited: Promise<number | null>, signalledAt: number) => Promise<T>,
): Promise<T> {
  const { api, port } = await startApiProcess(context.config, { SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs) });
  const agent = new http.Agent({ keepAlive: true });
  try {
    const payload = `{"unfinished":"${Math.random()}"}`;
    const body = JSON.stringify({
      payload,
      destination: "https://example.com/hook",
      scheduledTime: new Date(Date.now() + 60 * 60 * 1000).toISOString(),
    });
    let answered = false;
    const inFlight = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/events",
      agent,
      headers: {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "x-api-key": org.apiKey,
        expect: "100-continue",
      },
    });
    inFlight.on("response", () => {
      answered = true;
    });
    const closed = new Promise<void>((resolve) => inFlight.once("close", resolve));
    inFlight.on("error", () => {});
    const serverHasIt = new Promise<void>((resolve) => inFlight.once("continue", resolve));
    inFlight.flushHeaders();
    await serverHasIt;
    inFlight.write(body.slice(0, Math.floor(body.length / 2)));

    const exited = exitOf(api);
    const signalledAt = Date.now();
    signalService(api, "SIGTERM");
    await expect.poll(() => refusesConnections(port)).toBe(true);
    expect(api.child.exitCode).toBeNull();

    const result = await then(api, exited, signalledAt);

    // The exit closed the connection without an answer, and nothing was stored.
    await closed;
    expect(answered).toBe(false);
    expect(await context.db.event.count({ where: { orgId: org.orgId, payload } })).toBe(0);
    return result;
  } finally {
    agent.destroy();
    await api.stop("SIGKILL");
  }
}

describe("the API's shutdown cut short", () => {
  it("exits 1 when SHUTDOWN_TIMEOUT_MS runs out with a request still arriving", async () => {
    const timeoutMs = 1_500;
    const tookMs = await withUnfinishedRequest(timeoutMs, async (api, exited, signalledAt) => {
      expect(await exited, api.output()).toBe(1);
      expect(api.output()).toContain('"msg":"shutdown timed out"');
      expect(api.output()).not.toContain('"msg":"stopped"');
      return Date.now() - signalledAt;
    });
    expect(tookMs).toBeGreaterThanOrEqual(timeoutMs);
    expect(tookMs).toBeLessThan(timeoutMs + 5_000);
  });

  it("exits 1 at once on a second signal", async () => {
    const tookMs = await withUnfinishedRequest(60_000, async (api, exited) => {
      const signalled = Date.now();
      signalService(api, "SIGINT");
      expect(await exited, api.output()).toBe(1);
      expect(api.output()).toContain('"msg":"second signal: exiting now"');
      return Date.now() - signalled;
    });
    // At once: far from the 60 s the shutdown would have waited.
    expect(tookMs).toBeLessThan(2_000);
  });
});
