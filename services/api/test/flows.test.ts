import {
  type AdmissionStore,
  countPausedFlows,
  createAdmissionStore,
  createFailFastRedis,
  type FlowLimits,
  type HeldSummary,
} from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { sample } from "../../../test/support/prometheus.ts";
import { type ApiDeps, createApp } from "../src/app.ts";
import { createApiMetrics } from "../src/metrics/api-metrics.ts";

// Contract §10.2 through the HTTP API: `flowKey` on events and cron jobs (stored, answered, edited,
// kept by replays) and /api/flows (limits, pause, resume, delete, the MAX_FLOWS_PER_ORG limit, also
// under concurrent requests), with the counts GET answers read from what workers publish in Redis.
// The store's own calls put that state there here, as a worker would (real Redis, this file's prefix).

const HOUR_MS = 3_600_000;
const FLOW_KEY = "'flowKey' must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-'";
const RATE = "'rate' must be an integer from 1 to 10000, or null for no limit";
const PERIOD = "'periodMs' must be an integer from 1000 to 86400000 (milliseconds)";
const PARALLELISM = "'parallelism' must be an integer from 1 to 1000, or null for no limit";
const COUNTS_UNAVAILABLE = "Flow counts are unavailable (Redis did not answer), please try again later";

let context: TestContext;
let deps: ApiDeps;
let app: ReturnType<typeof createApp>;
let store: AdmissionStore;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000" });
  deps = createTestApiDeps(context).deps;
  app = createApp(deps);
  store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
});
afterAll(() => context.close());

const api = (org: TestOrganization, target = app) => ({
  get: (path: string) => request(target).get(path).set("x-api-key", org.apiKey),
  post: (path: string, body?: object) => {
    const call = request(target).post(path).set("x-api-key", org.apiKey);
    return body === undefined ? call : call.send(body);
  },
  put: (path: string, body: object) => request(target).put(path).set("x-api-key", org.apiKey).send(body),
  delete: (path: string) => request(target).delete(path).set("x-api-key", org.apiKey),
});

const future = (hours = 1) => new Date(Date.now() + hours * HOUR_MS).toISOString();
const eventBody = (fields: Record<string, unknown> = {}) => ({
  payload: '{"invoice":1042}',
  destination: "https://example.com/hook",
  scheduledTime: future(),
  ...fields,
});
const cronBody = (fields: Record<string, unknown> = {}) => ({
  payload: '{"report":true}',
  destination: "https://example.com/cron",
  expression: "0 6 * * 1",
  ...fields,
});

async function ok(call: PromiseLike<request.Response>, status = 200): Promise<Record<string, unknown>> {
  const response = await call;
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  return response.body;
}

async function refused(call: PromiseLike<request.Response>, status: number, message: string): Promise<void> {
  const response = await call;
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { message } });
}

async function flowRows(orgId: string) {
  return context.db.$queryRaw<
    { flow_key: string; rate: number | null; period_ms: number; parallelism: number | null; paused: boolean }[]
  >`SELECT flow_key, rate, period_ms, parallelism, paused FROM flows WHERE org_id = ${orgId} ORDER BY flow_key`;
}

const storedFlowKey = async (table: "events" | "cron_jobs", id: string) => {
  const rows =
    table === "events"
      ? await context.db.$queryRaw<{ flow_key: string | null }[]>`SELECT flow_key FROM events WHERE id = ${id}`
      : await context.db.$queryRaw<{ flow_key: string | null }[]>`SELECT flow_key FROM cron_jobs WHERE id = ${id}`;
  return rows[0]?.flow_key;
};

describe("an event's flowKey", () => {
  it("is stored and answered by create, get and list; null without one", async () => {
    const org = await createTestOrganization(context);
    const inFlow = await ok(api(org).post("/api/events", eventBody({ flowKey: "invoices" })));
    const plain = await ok(api(org).post("/api/events", eventBody({ scheduledTime: future(2) })));
    expect(inFlow.flowKey).toBe("invoices");
    expect(plain.flowKey).toBeNull();
    expect(await storedFlowKey("events", inFlow.id as string)).toBe("invoices");
    expect(await storedFlowKey("events", plain.id as string)).toBeNull();
    expect((await ok(api(org).get(`/api/events/${inFlow.id}`))).flowKey).toBe("invoices");
    const list = (await api(org).get("/api/events")).body as { id: string; flowKey: string | null }[];
    expect(list.map((event) => [event.id, event.flowKey])).toEqual([
      [inFlow.id, "invoices"],
      [plain.id, null],
    ]);
    // Naming a flow needs no record of it: the flow has no limits then.
    await refused(api(org).get("/api/flows/invoices"), 404, "No flow 'invoices'");
    expect(await flowRows(org.orgId)).toEqual([]);
  });

  it("is edited like the other optional fields: a value replaces, null clears, absent keeps", async () => {
    const org = await createTestOrganization(context);
    const { id } = await ok(api(org).post("/api/events", eventBody({ flowKey: "invoices" })));
    expect((await ok(api(org).put(`/api/events/${id}`, { payload: '{"invoice":1043}' }))).flowKey).toBe("invoices");
    expect((await ok(api(org).put(`/api/events/${id}`, { flowKey: "refunds" }))).flowKey).toBe("refunds");
    expect(await storedFlowKey("events", id as string)).toBe("refunds");
    expect((await ok(api(org).put(`/api/events/${id}`, { flowKey: null }))).flowKey).toBeNull();
    expect(await storedFlowKey("events", id as string)).toBeNull();
    // A flow key alone is a change.
    expect((await ok(api(org).put(`/api/events/${id}`, { flowKey: "invoices" }))).flowKey).toBe("invoices");
  });

  it("is kept by replays, one or in bulk", async () => {
    const org = await createTestOrganization(context);
    const { id: sentId } = await ok(api(org).post("/api/events", eventBody({ flowKey: "invoices" })));
    const { id: failedId } = await ok(api(org).post("/api/events", eventBody({ flowKey: "refunds" })));
    await context.db.$executeRaw`UPDATE events SET status = 'Sent', sent_at = now() WHERE id = ${sentId}`;
    await context.db.$executeRaw`UPDATE events SET status = 'Failed To Send', failed_at = now() WHERE id = ${failedId}`;

    const replay = await ok(api(org).post(`/api/events/${sentId}/replay`, {}));
    expect(replay).toMatchObject({ replayOf: sentId, flowKey: "invoices" });
    expect(await storedFlowKey("events", replay.id as string)).toBe("invoices");

    const bulk = await ok(api(org).post("/api/events/replay", { status: "Failed To Send" }));
    const [bulkId] = bulk.events as string[];
    expect((await ok(api(org).get(`/api/events/${bulkId}`))).flowKey).toBe("refunds");
    expect(await storedFlowKey("events", bulkId as string)).toBe("refunds");
  });

  it("is part of an idempotent request: the same key answers the first event, another flow key is refused", async () => {
    const org = await createTestOrganization(context);
    const body = eventBody({ flowKey: "invoices" });
    const send = (fields: object) =>
      request(app).post("/api/events").set("x-api-key", org.apiKey).set("Idempotency-Key", "inv-1042").send(fields);
    const first = await ok(send(body));
    expect(await ok(send(body))).toEqual(first);
    for (const other of [
      { ...body, flowKey: "refunds" },
      { ...body, flowKey: undefined },
    ]) {
      await refused(send(other), 422, "Idempotency-Key was already used with a different request");
    }
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(1);
  });
});

describe("a cron job's flowKey", () => {
  it("is stored, answered by create, get and list, and edited: a value replaces, null clears", async () => {
    const org = await createTestOrganization(context);
    const job = await ok(api(org).post("/api/cronjobs", cronBody({ flowKey: "reports" })));
    const plain = await ok(api(org).post("/api/cronjobs", cronBody()));
    expect(job).toMatchObject({ flowKey: "reports", history: [] });
    expect(plain.flowKey).toBeNull();
    expect(await storedFlowKey("cron_jobs", job.id as string)).toBe("reports");
    expect((await ok(api(org).get(`/api/cronjobs/${job.id}`))).flowKey).toBe("reports");
    const list = (await api(org).get("/api/cronjobs")).body as { id: string; flowKey: string | null }[];
    expect(list.map((item) => [item.id, item.flowKey])).toEqual([
      [job.id, "reports"],
      [plain.id, null],
    ]);

    expect((await ok(api(org).put(`/api/cronjobs/${job.id}`, { status: "Disabled" }))).flowKey).toBe("reports");
    expect((await ok(api(org).put(`/api/cronjobs/${job.id}`, { flowKey: "reports:weekly" }))).flowKey).toBe(
      "reports:weekly",
    );
    expect((await ok(api(org).put(`/api/cronjobs/${job.id}`, { flowKey: null }))).flowKey).toBeNull();
    expect(await storedFlowKey("cron_jobs", job.id as string)).toBeNull();
  });
});

describe("PUT /api/flows/{flowKey}", () => {
  it("creates the flow's record, with the default period and no limit for what is left out", async () => {
    const org = await createTestOrganization(context);
    const before = Date.now();
    const flow = await ok(api(org).put("/api/flows/invoices", { rate: 50 }));
    expect(flow).toEqual({
      flowKey: "invoices",
      rate: 50,
      periodMs: 1000,
      parallelism: null,
      paused: false,
      createdAt: expect.any(String),
      updatedAt: flow.createdAt,
    });
    expect(Date.parse(flow.createdAt as string)).toBeGreaterThanOrEqual(before - 1000);
    expect(await flowRows(org.orgId)).toEqual([
      { flow_key: "invoices", rate: 50, period_ms: 1000, parallelism: null, paused: false },
    ]);
  });

  it("replaces the limits as a whole and keeps the pause", async () => {
    const org = await createTestOrganization(context);
    await ok(api(org).put("/api/flows/invoices", { rate: 1000, periodMs: 3_600_000, parallelism: 5 }));
    await ok(api(org).post("/api/flows/invoices/pause"));
    const replaced = await ok(api(org).put("/api/flows/invoices", { parallelism: 2 }));
    expect(replaced).toMatchObject({ rate: null, periodMs: 1000, parallelism: 2, paused: true });
    const cleared = await ok(api(org).put("/api/flows/invoices", { rate: null, parallelism: null }));
    expect(cleared).toMatchObject({ rate: null, periodMs: 1000, parallelism: null, paused: true });
    expect(Date.parse(cleared.updatedAt as string)).toBeGreaterThanOrEqual(Date.parse(cleared.createdAt as string));
    expect(await flowRows(org.orgId)).toEqual([
      { flow_key: "invoices", rate: null, period_ms: 1000, parallelism: null, paused: true },
    ]);
  });

  it("accepts each limit's bounds", async () => {
    const org = await createTestOrganization(context);
    for (const limits of [
      { rate: 1, periodMs: 1000, parallelism: 1 },
      { rate: 10_000, periodMs: 86_400_000, parallelism: 1000 },
    ]) {
      expect(await ok(api(org).put("/api/flows/bounds", limits))).toMatchObject(limits);
    }
  });

  it("refuses each mistake with its own sentence, and writes nothing", async () => {
    const org = await createTestOrganization(context);
    const cases: [string, object, string][] = [
      ["invoices", { rate: 0 }, RATE],
      ["invoices", { rate: 10_001 }, RATE],
      ["invoices", { rate: 1.5 }, RATE],
      ["invoices", { rate: "10" }, RATE],
      ["invoices", { rate: 10, periodMs: 999 }, PERIOD],
      ["invoices", { rate: 10, periodMs: 86_400_001 }, PERIOD],
      ["invoices", { rate: 10, periodMs: null }, PERIOD],
      ["invoices", { parallelism: 0 }, PARALLELISM],
      ["invoices", { parallelism: 1001 }, PARALLELISM],
      ["invoices", { parallelism: true }, PARALLELISM],
      ["invoices", { rate: 10, paused: true }, "Unknown field 'paused'"],
      ["invoices", { rate: 10, flowKey: "invoices" }, "Unknown field 'flowKey'"],
      ["k".repeat(65), { rate: 10 }, FLOW_KEY],
      ["a%20b", { rate: 10 }, FLOW_KEY],
      ["caf%C3%A9", { rate: 10 }, FLOW_KEY],
    ];
    for (const [flowKey, body, message] of cases) {
      await refused(api(org).put(`/api/flows/${flowKey}`, body), 400, message);
    }
    await refused(api(org).put("/api/flows/invoices", []), 400, "Request body must be a JSON object");
    expect(await flowRows(org.orgId)).toEqual([]);
  });

  it("takes every character a flow key may have", async () => {
    const org = await createTestOrganization(context);
    const flowKey = `Tenant-42.invoices_EU:${"x".repeat(42)}`;
    expect(flowKey).toHaveLength(64);
    expect((await ok(api(org).put(`/api/flows/${flowKey}`, {}))).flowKey).toBe(flowKey);
    expect((await ok(api(org).get(`/api/flows/${flowKey}`))).flowKey).toBe(flowKey);
  });
});

describe("GET /api/flows and /api/flows/{flowKey}", () => {
  it("list the organization's flows by key, and answer a flow without a record with 404", async () => {
    const org = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    await ok(api(org).put("/api/flows/reports", { parallelism: 3 }));
    await ok(api(org).put("/api/flows/invoices", { rate: 50 }));
    await ok(api(other).put("/api/flows/invoices", { rate: 7 }));

    const list = (await ok(api(org).get("/api/flows"))) as unknown as Record<string, unknown>[];
    expect(list.map((flow) => [flow.flowKey, flow.rate, flow.parallelism])).toEqual([
      ["invoices", 50, null],
      ["reports", null, 3],
    ]);
    for (const flow of list) expect(flow).toMatchObject({ waiting: 0, inFlight: 0, oldestWaitingSince: null });
    expect((await ok(api(other).get("/api/flows/invoices"))).rate).toBe(7);

    await refused(api(org).get("/api/flows/refunds"), 404, "No flow 'refunds'");
    await refused(api(org).get(`/api/flows/${"k".repeat(65)}`), 400, FLOW_KEY);
    const fresh = await createTestOrganization(context);
    expect((await ok(api(fresh).get("/api/flows"))) as unknown).toEqual([]);
  });

  it("answer what the workers hold back and have in flight, summed over workers, for that flow alone", async () => {
    const org = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    await ok(api(org).put("/api/flows/invoices", { parallelism: 10 }));
    await ok(api(org).put("/api/flows/refunds", {}));
    await ok(api(other).put("/api/flows/invoices", {}));
    const oldest = Date.parse("2030-01-15T09:00:00.000Z");
    const held = (flows: [string, HeldSummary][]) => ({ flows: new Map(flows), origins: new Map() });
    // Two workers hold deliveries of the flow back; a third holds another flow's.
    await store.publishHeld(
      org.orgId,
      "worker-a",
      held([["invoices", { waiting: 3, oldestWaitingSince: oldest + 60_000 }]]),
    );
    await store.publishHeld(org.orgId, "worker-b", held([["invoices", { waiting: 2, oldestWaitingSince: oldest }]]));
    await store.publishHeld(org.orgId, "worker-c", held([["refunds", { waiting: 9, oldestWaitingSince: oldest }]]));
    // Four attempts of the flow in flight, admitted as a worker admits them.
    const limits: FlowLimits = { rate: null, periodMs: 1000, parallelism: 10, paused: false };
    const admitted = await store.admit({
      orgId: org.orgId,
      origin: "https://example.com",
      wanted: 4,
      flow: { key: "invoices", limits, leaseMs: 60_000 },
      probeMs: 30_000,
    });
    expect(admitted.granted).toBe(4);

    const flow = await ok(api(org).get("/api/flows/invoices"));
    expect(flow).toMatchObject({
      flowKey: "invoices",
      parallelism: 10,
      waiting: 5,
      inFlight: 4,
      oldestWaitingSince: "2030-01-15T09:00:00.000Z",
    });
    const list = (await ok(api(org).get("/api/flows"))) as unknown as Record<string, unknown>[];
    expect(list.map((item) => [item.flowKey, item.waiting, item.inFlight])).toEqual([
      ["invoices", 5, 4],
      ["refunds", 9, 0],
    ]);
    // Another organization's flow of the same key has its own counts.
    expect(await ok(api(other).get("/api/flows/invoices"))).toMatchObject({
      waiting: 0,
      inFlight: 0,
      oldestWaitingSince: null,
    });

    // Leases given back, and a worker that holds nothing any more: the counts follow.
    if ("leases" in admitted) await store.release([{ orgId: org.orgId, flowKey: "invoices", leases: admitted.leases }]);
    await store.publishHeld(org.orgId, "worker-a", held([]));
    expect(await ok(api(org).get("/api/flows/invoices"))).toMatchObject({
      waiting: 2,
      inFlight: 0,
      oldestWaitingSince: "2030-01-15T09:00:00.000Z",
    });
  });

  it("answer 503 with one sentence when Redis does not answer, without waiting for it", async () => {
    const org = await createTestOrganization(context);
    await ok(api(org).put("/api/flows/invoices", { rate: 5 }));
    const dead = createFailFastRedis("redis://127.0.0.1:1");
    dead.on("error", () => {});
    try {
      const offline = createApp({ ...deps, admissionStore: createAdmissionStore(dead, context.config.QUEUE_PREFIX) });
      const started = Date.now();
      await refused(api(org, offline).get("/api/flows/invoices"), 503, COUNTS_UNAVAILABLE);
      await refused(api(org, offline).get("/api/flows"), 503, COUNTS_UNAVAILABLE);
      expect(Date.now() - started).toBeLessThan(3_000);
      // The records live in Postgres: writes still work.
      expect(await ok(api(org, offline).post("/api/flows/invoices/pause"))).toMatchObject({ paused: true });
    } finally {
      dead.disconnect();
    }
  });
});

describe("pause and resume", () => {
  it("pause keeps the limits, resume clears only the pause; repeating either changes nothing", async () => {
    const org = await createTestOrganization(context);
    const created = await ok(api(org).put("/api/flows/invoices", { rate: 50, parallelism: 5 }));
    const paused = await ok(api(org).post("/api/flows/invoices/pause"));
    expect(paused).toMatchObject({ rate: 50, parallelism: 5, paused: true, createdAt: created.createdAt });
    expect(await ok(api(org).post("/api/flows/invoices/pause", {}))).toEqual(paused);
    expect((await ok(api(org).get("/api/flows/invoices"))).paused).toBe(true);

    const resumed = await ok(api(org).post("/api/flows/invoices/resume"));
    expect(resumed).toMatchObject({ rate: 50, parallelism: 5, paused: false });
    expect(await ok(api(org).post("/api/flows/invoices/resume"))).toEqual(resumed);
    expect(await flowRows(org.orgId)).toEqual([
      { flow_key: "invoices", rate: 50, period_ms: 1000, parallelism: 5, paused: false },
    ]);
  });

  it("pause of a flow without a record creates one without limits; resume of one answers 404", async () => {
    const org = await createTestOrganization(context);
    expect(await ok(api(org).post("/api/flows/invoices/pause"))).toMatchObject({
      flowKey: "invoices",
      rate: null,
      periodMs: 1000,
      parallelism: null,
      paused: true,
    });
    await refused(api(org).post("/api/flows/refunds/resume"), 404, "No flow 'refunds'");
    expect((await flowRows(org.orgId)).map((row) => row.flow_key)).toEqual(["invoices"]);
  });

  it("refuse a bad flow key and a body with a field", async () => {
    const org = await createTestOrganization(context);
    for (const action of ["pause", "resume"]) {
      await refused(api(org).post(`/api/flows/a%20b/${action}`), 400, FLOW_KEY);
      await refused(
        api(org).post(`/api/flows/invoices/${action}`, { until: "tomorrow" }),
        400,
        "Unknown field 'until'",
      );
    }
    expect(await flowRows(org.orgId)).toEqual([]);
  });
});

describe("DELETE /api/flows/{flowKey}", () => {
  it("removes the limits and the pause; events keep their flowKey", async () => {
    const org = await createTestOrganization(context);
    const event = await ok(api(org).post("/api/events", eventBody({ flowKey: "invoices" })));
    await ok(api(org).put("/api/flows/invoices", { rate: 50 }));
    await ok(api(org).post("/api/flows/invoices/pause"));
    const deleted = await api(org).delete("/api/flows/invoices");
    expect({ status: deleted.status, text: deleted.text }).toEqual({ status: 204, text: "" });
    expect(await flowRows(org.orgId)).toEqual([]);
    await refused(api(org).get("/api/flows/invoices"), 404, "No flow 'invoices'");
    await refused(api(org).delete("/api/flows/invoices"), 404, "No flow 'invoices'");
    await refused(api(org).delete(`/api/flows/${"k".repeat(65)}`), 400, FLOW_KEY);
    expect((await ok(api(org).get(`/api/events/${event.id}`))).flowKey).toBe("invoices");
  });

  it("is the organization's own: another organization's flow of that key stays", async () => {
    const org = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    await ok(api(other).put("/api/flows/invoices", { rate: 3 }));
    await refused(api(org).delete("/api/flows/invoices"), 404, "No flow 'invoices'");
    expect((await ok(api(other).get("/api/flows/invoices"))).rate).toBe(3);
  });
});

describe("the limit of flows per organization", () => {
  const LIMIT = 5;
  const limited = () => createApp({ ...deps, config: { ...context.config, MAX_FLOWS_PER_ORG: LIMIT } });

  it("refuses the 101st flow by default, with the configured number, and writes nothing", async () => {
    const org = await createTestOrganization(context);
    // 99 flows written as the API writes them, then the 100th and 101st through it.
    await context.db.$executeRaw`
      INSERT INTO flows (org_id, flow_key) SELECT ${org.orgId}, 'bulk-' || n FROM generate_series(1, 99) AS n`;
    await ok(api(org).put("/api/flows/hundredth", { rate: 1 }));
    await refused(
      api(org).put("/api/flows/one-more", { rate: 1 }),
      403,
      "Flow limit of 100 reached for this organization",
    );
    await refused(api(org).post("/api/flows/one-more/pause"), 403, "Flow limit of 100 reached for this organization");
    expect(await context.db.flow.count({ where: { orgId: org.orgId } })).toBe(100);
    // At the limit, flows that exist are still configured, paused and resumed.
    await ok(api(org).put("/api/flows/bulk-1", { parallelism: 2 }));
    await ok(api(org).post("/api/flows/bulk-2/pause"));
    await ok(api(org).post("/api/flows/bulk-2/resume"));
    // One deleted makes room for one more.
    expect((await api(org).delete("/api/flows/bulk-3")).status).toBe(204);
    await ok(api(org).put("/api/flows/one-more", { rate: 1 }));
    expect(await context.db.flow.count({ where: { orgId: org.orgId } })).toBe(100);
  });

  it("holds under concurrent creates: exactly the limit is created, the rest refused", async () => {
    const org = await createTestOrganization(context);
    const target = limited();
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, n) =>
        n % 3 === 0
          ? api(org, target).post(`/api/flows/flow-${n}/pause`)
          : api(org, target).put(`/api/flows/flow-${n}`, { rate: n + 1 }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((status) => status === 403)).toHaveLength(24 - LIMIT);
    for (const answer of answers.filter((one) => one.status === 403)) {
      expect(answer.body).toEqual({ message: `Flow limit of ${LIMIT} reached for this organization` });
    }
    const created = answers.filter((answer) => answer.status === 200).map((answer) => answer.body.flowKey);
    expect((await flowRows(org.orgId)).map((row) => row.flow_key).sort()).toEqual([...created].sort());
  });

  it("counts each organization apart", async () => {
    const target = limited();
    const full = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    for (let n = 0; n < LIMIT; n++) await ok(api(full, target).put(`/api/flows/f${n}`, {}));
    await refused(
      api(full, target).put("/api/flows/extra", {}),
      403,
      `Flow limit of ${LIMIT} reached for this organization`,
    );
    await ok(api(other, target).put("/api/flows/f0", {}));
  });
});

describe("access", () => {
  it("needs the organization's API key", async () => {
    expect((await request(app).get("/api/flows")).status).toBe(401);
    expect((await request(app).put("/api/flows/invoices").send({ rate: 1 })).status).toBe(401);
    expect((await request(app).post("/api/flows/invoices/pause")).status).toBe(401);
    expect((await request(app).delete("/api/flows/invoices")).status).toBe(401);
  });
});

describe("GET /metrics", () => {
  it("counts the paused flows of every organization, one series", async () => {
    const metrics = createApiMetrics({
      defaultMetrics: false,
      flows: {
        unhealthyDestinations: () => store.unhealthyCount(),
        pausedFlows: () => countPausedFlows(context.db),
      },
    });
    const target = createApp({ ...deps, metrics });
    const paused = async () => sample((await request(target).get("/metrics")).text, "punctual_flows_paused", {});
    const before = (await paused()) ?? 0;
    const one = await createTestOrganization(context);
    const two = await createTestOrganization(context);
    await ok(api(one, target).post("/api/flows/a/pause"));
    await ok(api(one, target).post("/api/flows/b/pause"));
    await ok(api(two, target).post("/api/flows/a/pause"));
    await ok(api(two, target).put("/api/flows/c", { rate: 1 }));
    expect(await paused()).toBe(before + 3);
    await ok(api(two, target).post("/api/flows/a/resume"));
    expect(await paused()).toBe(before + 2);
    const text = (await request(target).get("/metrics")).text;
    expect(text.split("\n").filter((line) => line.startsWith("punctual_flows_paused"))).toHaveLength(1);
  });
});
