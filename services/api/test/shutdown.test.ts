import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { exitOf, refusesConnections, signalService, startApiProcess } from "../../../test/support/processes.ts";

// Contract §8: on SIGTERM the API stops accepting connections, answers the requests in flight,
// closes Postgres and Redis, and exits 0. A real API process; the request in flight is a create
// whose body is still arriving (sent with `Expect: 100-continue`, so the test knows the server has
// taken the request before it signals).
//
// The services run as `node --import tsx` (test/support/processes.ts), so a signal reaches them
// directly (the tsx launcher would SIGKILL a busy child 30 ms after relaying one: see the README).
let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

interface Answer {
  status: number;
  body: string;
  at: number;
}

describe("SIGTERM", () => {
  it("refuses new connections, answers the request in flight, then exits 0", async () => {
    const { api, port } = await startApiProcess(context.config);
    const agent = new http.Agent({ keepAlive: true });
    try {
      // An idle keep-alive connection must not hold the shutdown open.
      const idle = new http.Agent({ keepAlive: true });
      await new Promise<void>((resolve, reject) =>
        http
          .get({ host: "127.0.0.1", port, path: "/healthz", agent: idle }, (res) => res.resume().on("end", resolve))
          .on("error", reject),
      );

      const body = JSON.stringify({
        payload: '{"drained":true}',
        destination: "https://example.com/hook",
        scheduledTime: new Date(Date.now() + 60 * 60 * 1000).toISOString(),
      });
      let answered: (answer: Answer) => void = () => {};
      const answer = new Promise<Answer>((resolve) => {
        answered = resolve;
      });
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
      inFlight.on("response", (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => answered({ status: res.statusCode ?? 0, body: text, at: Date.now() }));
      });
      inFlight.on("error", (error) => answered({ status: -1, body: String(error), at: Date.now() }));
      const serverHasIt = new Promise<void>((resolve) => inFlight.once("continue", resolve));
      inFlight.flushHeaders();
      await serverHasIt;
      // Half the body now; the rest only after the signal.
      const half = Math.floor(body.length / 2);
      inFlight.write(body.slice(0, half));

      const exited = exitOf(api);
      signalService(api, "SIGTERM");
      await expect.poll(() => refusesConnections(port)).toBe(true);
      expect(api.child.exitCode).toBeNull();

      inFlight.end(body.slice(half));
      const { status, body: text, at } = await answer;
      expect(status, `${text}\n${api.output()}`).toBe(200);
      const created = JSON.parse(text) as { id: string };
      expect(await context.db.event.findUnique({ where: { id: created.id }, select: { status: true } })).toEqual({
        status: "Pending",
      });

      expect(await exited, api.output()).toBe(0);
      // Exits right after the last answer, not after the 5 s keep-alive timeout of its connection.
      const drainMs = Date.now() - at;
      expect(drainMs).toBeLessThan(2_500);
      expect(api.output()).toContain('"msg":"stopped"');
      console.info(`api shutdown: in-flight create answered ${status} after SIGTERM, exited 0 ${drainMs} ms later`);
      idle.destroy();
    } finally {
      agent.destroy();
      await api.stop("SIGKILL");
    }
  });
});
