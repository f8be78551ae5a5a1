import { QUEUE_NAMES } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, createTestContext, type TestContext } from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

// Contract §8: Bull Board at /admin/queues shows every queue, behind the admin credentials (HTTP
// Basic with ADMIN_TOKEN as the password, or the Bearer token); never open.

const ADMIN_TOKEN = "bull-board-admin-token-0123";
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

let context: TestContext;
let app: ReturnType<typeof createApp>;
let queues: ReturnType<typeof createTestApiDeps>;

beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN });
  queues = createTestApiDeps(context);
  app = createApp(queues.deps);
});
afterAll(() => context.close());

describe("Bull Board", () => {
  it("asks for credentials: 401 with a Basic challenge and a JSON body", async () => {
    for (const path of ["/admin/queues", "/admin/queues/api/queues", "/admin/queues/static/js/main.js"]) {
      const response = await request(app).get(path);
      expect(response.status, path).toBe(401);
      expect(response.headers["www-authenticate"]).toBe('Basic realm="Punctual"');
      expect(response.body).toEqual({ message: "Admin credentials required" });
    }
  });

  it("refuses wrong credentials", async () => {
    for (const authorization of [
      basic("admin", "wrong-password"),
      basic(ADMIN_TOKEN, ""),
      `Bearer ${ADMIN_TOKEN}x`,
      `Basic ${Buffer.from(ADMIN_TOKEN).toString("base64")}`,
      "Basic !!!",
      ADMIN_TOKEN,
    ]) {
      const response = await request(app).get("/admin/queues").set("authorization", authorization);
      expect(response.status, authorization).toBe(401);
    }
  });

  it("opens with Basic (any user, ADMIN_TOKEN as password) or with the Bearer token", async () => {
    for (const authorization of [basic("admin", ADMIN_TOKEN), basic("", ADMIN_TOKEN), `Bearer ${ADMIN_TOKEN}`]) {
      const response = await request(app).get("/admin/queues").set("authorization", authorization);
      expect(response.status, authorization).toBe(200);
      expect(response.headers["content-type"]).toMatch(/^text\/html/);
      expect(response.text).toContain('<base href="/admin/queues/" />');
      expect(response.text).toContain("<title>Punctual queues</title>");
    }
  });

  it("shows every queue under the deployment's prefix, with its jobs", async () => {
    await queues.queue.add(
      "deliver-event",
      { eventId: "evt_shown_in_board" },
      { delay: 3_600_000, jobId: "event-shown" },
    );
    const response = await request(app)
      .get("/admin/queues/api/queues")
      .query({ activeQueue: QUEUE_NAMES.events, status: "delayed", page: "1" })
      .set("authorization", basic("admin", ADMIN_TOKEN));
    expect(response.status).toBe(200);
    const shown = response.body.queues as { name: string; counts: Record<string, number>; jobs: { id: string }[] }[];
    expect(shown.map((queue) => queue.name).sort()).toEqual(Object.values(QUEUE_NAMES).sort());
    const events = shown.find((queue) => queue.name === QUEUE_NAMES.events);
    expect(events?.counts.delayed).toBe(1);
    expect(events?.jobs.map((job) => job.id)).toEqual(["event-shown"]);
  });

  it("hands paths it does not know back to the app's JSON 404", async () => {
    const response = await request(app)
      .get("/admin/queues/api/no-such-call")
      .set("authorization", basic("admin", ADMIN_TOKEN));
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Not found" });
  });

  it("does not exist when no ADMIN_TOKEN is configured", async () => {
    const closed = createApp({ ...queues.deps, config: { ...queues.deps.config, ADMIN_TOKEN: undefined } });
    for (const authorization of [undefined, basic("admin", ADMIN_TOKEN), `Bearer ${ADMIN_TOKEN}`]) {
      const call = request(closed).get("/admin/queues");
      const response = await (authorization === undefined ? call : call.set("authorization", authorization));
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Not found" });
      expect(response.headers["www-authenticate"]).toBeUndefined();
    }
  });
});
