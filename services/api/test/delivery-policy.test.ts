import { Writable } from "node:stream";
import { createLogger } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import {
  defaultEffectivePolicy,
  POLICY_REFUSAL_CASES,
  RAW_PAYLOAD_REFUSAL,
} from "../../../test/support/delivery-policy.ts";
import { startReceiver } from "../../../test/support/receiver.ts";
import { createApp } from "../src/app.ts";

// Contract §10.1 through the HTTP API: the delivery policy fields of events and cron jobs, what is
// stored (the database row) and what is answered (the effective policy, sensitive header values
// redacted), the organization's default, edits, idempotency and replays. Secret header values
// reach the database and the receiver only: never an answer, never a log line.

const HOUR_MS = 3_600_000;
const SECRET = "Bearer s3cret-token-123";
const REDACTED = "[redacted]";

let context: TestContext;
let app: ReturnType<typeof createApp>;
/** Every line the API logged, at every level. */
const logLines: string[] = [];

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000", LOG_LEVEL: "trace" });
  const { deps } = createTestApiDeps(context);
  const logger = createLogger(
    { LOG_LEVEL: "trace" },
    "api",
    new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    }),
  );
  app = createApp({ ...deps, logger });
});
afterAll(() => context.close());

const future = (hours = 1) => new Date(Date.now() + hours * HOUR_MS).toISOString();
const eventBody = (fields: Record<string, unknown> = {}) => ({
  payload: '{"order":42}',
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

const api = (org: TestOrganization) => ({
  post: (path: string, body: object) => request(app).post(path).set("x-api-key", org.apiKey).send(body),
  put: (path: string, body: object) => request(app).put(path).set("x-api-key", org.apiKey).send(body),
  get: (path: string) => request(app).get(path).set("x-api-key", org.apiKey),
});

async function created(org: TestOrganization, path: string, body: object): Promise<Record<string, unknown>> {
  const response = await api(org).post(path, body);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function eventRow(id: string) {
  const [row] = await context.db.$queryRaw<{ delivery_policy: unknown; payload: string; updated_at: Date }[]>`
    SELECT delivery_policy, payload, updated_at FROM events WHERE id = ${id}`;
  return row;
}

async function cronRow(id: string) {
  const [row] = await context.db.$queryRaw<{ delivery_policy: unknown; payload: string; updated_at: Date }[]>`
    SELECT delivery_policy, payload, updated_at FROM cron_jobs WHERE id = ${id}`;
  return row;
}

const defaults = () => defaultEffectivePolicy(context.config);

describe("the policy fields are refused with their own sentence", () => {
  let org: TestOrganization;
  let eventId: string;
  let cronJobId: string;

  beforeAll(async () => {
    org = await createTestOrganization(context);
    eventId = (await created(org, "/api/events", eventBody())).id as string;
    cronJobId = (await created(org, "/api/cronjobs", cronBody())).id as string;
  });

  const cases = [...POLICY_REFUSAL_CASES, RAW_PAYLOAD_REFUSAL].map((refusal) => [refusal.message, refusal] as const);

  it.each(cases)("creating an event: %s", async (message, { fields }) => {
    const response = await api(org).post("/api/events", eventBody(fields));
    expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
  });

  it.each(cases)("editing an event: %s", async (message, { fields }) => {
    const response = await api(org).put(`/api/events/${eventId}`, fields);
    expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
  });

  it.each(cases)("creating a cron job: %s", async (message, { fields }) => {
    const response = await api(org).post("/api/cronjobs", cronBody(fields));
    expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
  });

  it.each(cases)("editing a cron job: %s", async (message, { fields }) => {
    const response = await api(org).put(`/api/cronjobs/${cronJobId}`, fields);
    expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
  });

  it.each(POLICY_REFUSAL_CASES.map((refusal) => [refusal.message, refusal] as const))(
    "setting the organization's default: %s",
    async (message, { fields }) => {
      const response = await api(org).put("/api/delivery-policy", fields);
      expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
    },
  );

  it("created nothing and changed nothing", async () => {
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(1);
    expect(await context.db.cronJob.count({ where: { orgId: org.orgId } })).toBe(1);
    expect((await eventRow(eventId))?.delivery_policy).toBeNull();
    expect((await cronRow(cronJobId))?.delivery_policy).toBeNull();
    expect((await api(org).get("/api/delivery-policy")).body).toEqual({});
  });

  it("refuses null in a create, where it means nothing", async () => {
    const response = await api(org).post("/api/events", eventBody({ timeoutMs: null }));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: "'timeoutMs' must be an integer from 1000 to 60000" });
  });
});

describe("an event's policy", () => {
  const policy = {
    method: "PUT",
    headers: { Authorization: SECRET, "X-Trace": "order-42", "X-Api-Key": "k-123" },
    body: "raw",
    timeoutMs: 20_000,
    retry: { attempts: 4, backoff: "exponential", initialDelayMs: 500, maxDelayMs: 4000, stopOnStatus: [410] },
  };
  const effective = {
    method: "PUT",
    headers: { Authorization: REDACTED, "X-Trace": "order-42", "X-Api-Key": REDACTED },
    body: "raw",
    timeoutMs: 20_000,
    retry: {
      attempts: 4,
      backoff: "exponential",
      initialDelayMs: 500,
      maxDelayMs: 4000,
      jitter: false,
      maxAgeMs: null,
      stopOnStatus: [410],
    },
  };

  it("is stored as given and answered effective and redacted, never logged", async () => {
    const org = await createTestOrganization(context);
    logLines.length = 0;
    const answer = await created(org, "/api/events", eventBody(policy));
    expect(answer).toMatchObject(effective);
    expect((await eventRow(answer.id as string))?.delivery_policy).toEqual(policy);

    const got = await api(org).get(`/api/events/${answer.id}`);
    expect(got.body).toMatchObject({ ...effective, history: [] });
    const list = await api(org).get("/api/events");
    expect(list.body).toEqual([expect.objectContaining(effective)]);

    for (const text of [JSON.stringify(answer), got.text, list.text]) {
      expect(text).not.toContain("s3cret-token-123");
      expect(text).not.toContain("k-123");
    }
    // A refused request that carries the secret does not echo it either.
    const refused = await api(org).post(
      "/api/events",
      eventBody({ ...policy, headers: { ...policy.headers, Host: "x" } }),
    );
    expect(refused.status).toBe(400);
    expect(refused.text).not.toContain("s3cret-token-123");
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join("")).not.toContain("s3cret-token-123");
  });

  it("is NULL without fields, and answered as the deployment's defaults", async () => {
    const org = await createTestOrganization(context);
    const answer = await created(org, "/api/events", eventBody());
    expect(answer).toMatchObject(defaults());
    expect((await eventRow(answer.id as string))?.delivery_policy).toBeNull();
  });

  it("is edited field by field: a field replaces, null removes, and no field left is NULL", async () => {
    const org = await createTestOrganization(context);
    const { id } = await created(org, "/api/events", eventBody({ ...policy, body: "envelope" }));
    const edited = await api(org).put(`/api/events/${id}`, { timeoutMs: 30_000, retry: null, headers: { "X-A": "1" } });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({
      method: "PUT",
      headers: { "X-A": "1" },
      body: "envelope",
      timeoutMs: 30_000,
      retry: defaults().retry,
    });
    expect((await eventRow(id as string))?.delivery_policy).toEqual({
      method: "PUT",
      headers: { "X-A": "1" },
      body: "envelope",
      timeoutMs: 30_000,
    });
    const cleared = await api(org).put(`/api/events/${id}`, {
      method: null,
      headers: null,
      body: null,
      timeoutMs: null,
      retry: null,
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject(defaults());
    expect((await eventRow(id as string))?.delivery_policy).toBeNull();
  });

  it("is refused on the effective values, and a refused edit changes nothing", async () => {
    const org = await createTestOrganization(context);
    const { id } = await created(org, "/api/events", eventBody({ payload: "plain text", body: "raw" }));
    const before = await eventRow(id as string);
    // The stored raw body with a JSON Content-Type given now: the stored payload is not JSON.
    const refused = await api(org).put(`/api/events/${id}`, {
      headers: { "Content-Type": "application/json" },
      timeoutMs: 5000,
      destination: "https://example.com/moved",
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ message: RAW_PAYLOAD_REFUSAL.message });
    expect(await eventRow(id as string)).toEqual(before);
    expect((await api(org).get(`/api/events/${id}`)).body).toMatchObject({
      destination: "https://example.com/hook",
      timeoutMs: context.config.DELIVERY_TIMEOUT_MS,
    });
    // A JSON payload with it is fine.
    const accepted = await api(org).put(`/api/events/${id}`, {
      payload: '{"ok":true}',
      headers: { "Content-Type": "application/json" },
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  });

  it("cannot be edited once the event is no longer Pending", async () => {
    const org = await createTestOrganization(context);
    const { id } = await created(org, "/api/events", eventBody());
    await context.db.$executeRaw`UPDATE events SET status = 'Sent', sent_at = now() WHERE id = ${id}`;
    const response = await api(org).put(`/api/events/${id}`, { timeoutMs: 5000 });
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: { message: "Only Pending events can be updated" },
    });
    expect((await eventRow(id as string))?.delivery_policy).toBeNull();
  });

  it("is part of an idempotent request: the same policy answers the first event, another is refused", async () => {
    const org = await createTestOrganization(context);
    const body = eventBody({ headers: { "X-A": "1", "X-B": "2" }, timeoutMs: 5000 });
    const send = (fields: object) =>
      request(app).post("/api/events").set("x-api-key", org.apiKey).set("Idempotency-Key", "k-1").send(fields);
    const first = await send(body);
    expect(first.status).toBe(200);
    const repeat = await send({ ...body, headers: { "X-B": "2", "X-A": "1" } });
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    for (const other of [
      { ...body, timeoutMs: 6000 },
      { ...body, headers: { "X-A": "1" } },
      { ...body, timeoutMs: undefined },
      { ...body, method: "PATCH" },
    ]) {
      const response = await send(other);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 422,
        body: { message: "Idempotency-Key was already used with a different request" },
      });
    }
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(1);
  });

  it("is kept by replays, one or in bulk", async () => {
    const org = await createTestOrganization(context);
    const stored = { method: "PATCH", headers: { Authorization: SECRET }, retry: { delaysMs: [200] } };
    const { id } = await created(org, "/api/events", eventBody(stored));
    const { id: failedId } = await created(org, "/api/events", eventBody(stored));
    await context.db.$executeRaw`UPDATE events SET status = 'Sent', sent_at = now() WHERE id = ${id}`;
    await context.db.$executeRaw`UPDATE events SET status = 'Failed To Send', failed_at = now() WHERE id = ${failedId}`;
    // A default set since then does not reach the replays: they copy the original's policy.
    await api(org).put("/api/delivery-policy", { timeoutMs: 9000, method: "GET" });

    const replay = await api(org).post(`/api/events/${id}/replay`, {});
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(replay.body).toMatchObject({ method: "PATCH", headers: { Authorization: REDACTED }, replayOf: id });
    expect((await eventRow(replay.body.id))?.delivery_policy).toEqual(stored);

    const bulk = await api(org).post("/api/events/replay", { status: "Failed To Send" });
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(200);
    expect(bulk.body.replayed).toBe(1);
    expect((await eventRow(bulk.body.events[0]))?.delivery_policy).toEqual(stored);
    expect(JSON.stringify((await api(org).get(`/api/events/${bulk.body.events[0]}`)).body)).not.toContain(
      "s3cret-token-123",
    );
  });
});

describe("the organization's default", () => {
  it("is {} at first, stored as given and answered redacted; {} clears it", async () => {
    const org = await createTestOrganization(context);
    expect((await api(org).get("/api/delivery-policy")).body).toEqual({});
    const policy = { headers: { Authorization: SECRET, "X-Source": "punctual" }, timeoutMs: 15_000 };
    const set = await api(org).put("/api/delivery-policy", policy);
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ headers: { Authorization: REDACTED, "X-Source": "punctual" }, timeoutMs: 15_000 });
    expect((await api(org).get("/api/delivery-policy")).body).toEqual(set.body);
    const [row] = await context.db.$queryRaw<{ delivery_policy: unknown }[]>`
      SELECT delivery_policy FROM organizations WHERE id = ${org.orgId}`;
    expect(row?.delivery_policy).toEqual(policy);

    const cleared = await api(org).put("/api/delivery-policy", {});
    expect({ status: cleared.status, body: cleared.body }).toEqual({ status: 200, body: {} });
    const [after] = await context.db.$queryRaw<{ delivery_policy: unknown }[]>`
      SELECT delivery_policy FROM organizations WHERE id = ${org.orgId}`;
    expect(after?.delivery_policy).toBeNull();
  });

  it("needs the organization's API key, and is the organization's own", async () => {
    expect((await request(app).get("/api/delivery-policy")).status).toBe(401);
    expect((await request(app).put("/api/delivery-policy").send({ timeoutMs: 5000 })).status).toBe(401);
    const one = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    await api(one).put("/api/delivery-policy", { timeoutMs: 5000 });
    expect((await api(other).get("/api/delivery-policy")).body).toEqual({});
  });

  it("is merged into events created afterwards, field by field, and a created event keeps it", async () => {
    const org = await createTestOrganization(context);
    const before = await created(org, "/api/events", eventBody());
    await api(org).put("/api/delivery-policy", {
      method: "PUT",
      headers: { "X-Default": "1" },
      timeoutMs: 15_000,
    });
    const inherits = await created(org, "/api/events", eventBody());
    const own = await created(org, "/api/events", eventBody({ headers: { "X-Own": "1" }, timeoutMs: 2000 }));
    expect((await eventRow(before.id as string))?.delivery_policy).toBeNull();
    expect((await eventRow(inherits.id as string))?.delivery_policy).toEqual({
      method: "PUT",
      headers: { "X-Default": "1" },
      timeoutMs: 15_000,
    });
    // Own headers replace the default's as a whole.
    expect((await eventRow(own.id as string))?.delivery_policy).toEqual({
      method: "PUT",
      headers: { "X-Own": "1" },
      timeoutMs: 2000,
    });
    expect(inherits).toMatchObject({ method: "PUT", headers: { "X-Default": "1" }, timeoutMs: 15_000 });

    // The default changes: events already created keep theirs.
    await api(org).put("/api/delivery-policy", { method: "DELETE" });
    expect((await eventRow(inherits.id as string))?.delivery_policy).toEqual({
      method: "PUT",
      headers: { "X-Default": "1" },
      timeoutMs: 15_000,
    });
    expect((await api(org).get(`/api/events/${inherits.id}`)).body).toMatchObject({ method: "PUT", timeoutMs: 15_000 });
    expect((await api(org).get(`/api/events/${before.id}`)).body).toMatchObject(defaults());
  });

  it("takes part in the raw-body rule of a create", async () => {
    const org = await createTestOrganization(context);
    await api(org).put("/api/delivery-policy", { body: "raw", headers: { "Content-Type": "application/json" } });
    const refused = await api(org).post("/api/events", eventBody({ payload: "not json" }));
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 400,
      body: { message: RAW_PAYLOAD_REFUSAL.message },
    });
    // Own fields that settle it: the default's Content-Type is replaced by the own headers.
    await created(org, "/api/events", eventBody({ payload: "not json", headers: { "X-A": "1" } }));
    await created(org, "/api/events", eventBody({ payload: '{"a":1}' }));
    const cronRefused = await api(org).post("/api/cronjobs", cronBody({ payload: "not json" }));
    expect(cronRefused.status).toBe(400);
    expect(cronRefused.body).toEqual({ message: RAW_PAYLOAD_REFUSAL.message });
  });
});

describe("a cron job's policy", () => {
  it("stores only its own fields; its answers follow the organization's current default", async () => {
    const org = await createTestOrganization(context);
    await api(org).put("/api/delivery-policy", { timeoutMs: 15_000, method: "PUT" });
    const job = await created(
      org,
      "/api/cronjobs",
      cronBody({ headers: { "X-Api-Key": "cron-key-9" }, retry: { delaysMs: [1000, 2000] } }),
    );
    const own = { headers: { "X-Api-Key": "cron-key-9" }, retry: { delaysMs: [1000, 2000] } };
    expect((await cronRow(job.id as string))?.delivery_policy).toEqual(own);
    const effective = {
      method: "PUT",
      headers: { "X-Api-Key": REDACTED },
      body: "envelope",
      timeoutMs: 15_000,
      retry: { delaysMs: [1000, 2000], maxAgeMs: null, stopOnStatus: [] },
    };
    expect(job).toMatchObject({ ...effective, history: [] });

    await api(org).put("/api/delivery-policy", { timeoutMs: 25_000 });
    const now = { ...effective, method: "POST", timeoutMs: 25_000 };
    expect((await api(org).get(`/api/cronjobs/${job.id}`)).body).toMatchObject(now);
    expect((await api(org).get("/api/cronjobs")).body).toEqual([expect.objectContaining(now)]);
    expect((await cronRow(job.id as string))?.delivery_policy).toEqual(own);
    const texts = [(await api(org).get(`/api/cronjobs/${job.id}`)).text, (await api(org).get("/api/cronjobs")).text];
    for (const text of texts) expect(text).not.toContain("cron-key-9");
  });

  it("is edited field by field, and a refused edit changes nothing", async () => {
    const org = await createTestOrganization(context);
    const job = await created(org, "/api/cronjobs", cronBody({ payload: "plain", body: "raw", timeoutMs: 3000 }));
    const edited = await api(org).put(`/api/cronjobs/${job.id}`, { timeoutMs: null, method: "PATCH" });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({ method: "PATCH", body: "raw", timeoutMs: context.config.DELIVERY_TIMEOUT_MS });
    expect((await cronRow(job.id as string))?.delivery_policy).toEqual({ method: "PATCH", body: "raw" });

    const before = await cronRow(job.id as string);
    const refused = await api(org).put(`/api/cronjobs/${job.id}`, {
      headers: { "Content-Type": "application/vnd.api+json" },
      expression: "0 7 * * *",
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      message: "'payload' must be valid JSON when 'body' is 'raw' and Content-Type is application/vnd.api+json",
    });
    expect(await cronRow(job.id as string)).toEqual(before);
    expect((await api(org).get(`/api/cronjobs/${job.id}`)).body.expression).toBe("0 6 * * 1");

    const cleared = await api(org).put(`/api/cronjobs/${job.id}`, { method: null, body: null });
    expect(cleared.status).toBe(200);
    expect((await cronRow(job.id as string))?.delivery_policy).toBeNull();
    expect(cleared.body).toMatchObject(defaults());
  });
});

describe("a test delivery", () => {
  it("is sent with its own fields over the organization's default", async () => {
    const receiver = await startReceiver();
    try {
      const org = await createTestOrganization(context);
      await api(org).put("/api/delivery-policy", { headers: { Authorization: SECRET }, body: "raw" });
      const response = await api(org).post("/api/events/test", {
        destination: receiver.url,
        payload: "plain text",
        method: "PATCH",
        timeoutMs: 5000,
      });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body).toMatchObject({ responseStatus: 200, error: null });
      const [delivery] = receiver.deliveries;
      expect(delivery).toMatchObject({ method: "PATCH", rawBody: "plain text" });
      expect(delivery?.headers.authorization).toBe(SECRET);
      expect(delivery?.headers["content-type"]).toBe("text/plain; charset=utf-8");

      const refused = await api(org).post("/api/events/test", {
        destination: receiver.url,
        payload: "plain text",
        headers: { "Content-Type": "application/json" },
      });
      expect(refused.body).toEqual({ message: RAW_PAYLOAD_REFUSAL.message });
      expect(receiver.deliveries).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
