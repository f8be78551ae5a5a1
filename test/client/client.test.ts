import { randomBytes } from "node:crypto";
import type { EventQueue } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPunctualAdminClient,
  createPunctualClient,
  type EventStatus,
  type PunctualClient,
  PunctualError,
} from "../../packages/client/src/index.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { scheduleEvent } from "../support/events.ts";
import { type LiveApi, startLiveApi } from "../support/live-api.ts";
import { type Receiver, startTestReceiver } from "../support/receiver.ts";
import { startTestWorker } from "../support/worker.ts";

// Every method of @punctual/client against a listening Punctual API on the real Postgres and Redis,
// with a worker delivering to loopback receivers where a method needs delivered or failed events
// (replay, bulk replay, stats). Each test uses an organization of its own, so lists hold exactly
// what the test made.

const ADMIN_TOKEN = "cli-Qw7eR4tY9uI2oP5aS8dF";
const HOUR_MS = 3_600_000;
const MISSING_EVENT = "evt_00000000000000000000000000";
const MISSING_CRON_JOB = "cron_00000000000000000000000000";

let context: TestContext;
let api: LiveApi;
let receiver: Receiver;
/** Answers 500 to every path but those in `accepting`: its deliveries end Failed To Send. */
let refusing: Receiver;
const accepting = new Set<string>();
let eventQueue: EventQueue;

beforeAll(async () => {
  // One retry, soon: a refused delivery ends Failed To Send within a second.
  context = await createTestContext({ ADMIN_TOKEN, RETRY_DELAYS_MS: "200", WORKER_HEALTH_PORT: "0" });
  api = await startLiveApi(context);
  receiver = await startTestReceiver(context);
  refusing = await startTestReceiver(context, { status: (_n, req) => (accepting.has(req.path) ? 200 : 500) });
  eventQueue = createTestApiDeps(context).deps.eventQueue;
  await startTestWorker(context);
});
afterAll(() => context?.close());

const inHours = (hours: number) => new Date(Date.now() + hours * HOUR_MS);

/** A new organization and a client holding its API key. */
async function organization(): Promise<{ org: TestOrganization; client: PunctualClient }> {
  const org = await createTestOrganization(context);
  return { org, client: createPunctualClient({ baseUrl: api.baseUrl, apiKey: org.apiKey }) };
}

/**
 * Schedules an event due in a moment, as the API does (straight through the event queue: the API's
 * check that the time is still ahead could fail on a loaded machine), and waits until the worker has
 * left it in `status`.
 */
async function delivered(org: TestOrganization, client: PunctualClient, destination: string, status: EventStatus) {
  const { id } = await scheduleEvent(context, eventQueue, {
    orgId: org.orgId,
    payload: JSON.stringify({ order: 42 }),
    destination,
    scheduledTime: new Date(Date.now() + 300),
  });
  await expect.poll(async () => (await client.events.get(id)).status).toBe(status);
  return client.events.get(id);
}

const thrownBy = (call: Promise<unknown>) =>
  call.then(
    () => {
      throw new Error("expected the call to throw");
    },
    (error: unknown) => error,
  );

describe("events", () => {
  it("create schedules a Pending event, a Date accepted for scheduledTime, and stores it", async () => {
    const { org, client } = await organization();
    const scheduledTime = inHours(1);

    const event = await client.events.create({ payload: '{"a":1}', destination: receiver.url, scheduledTime });

    expect(event).toMatchObject({
      id: expect.stringMatching(/^evt_[0-9a-z]{26}$/),
      payload: '{"a":1}',
      destination: receiver.url,
      scheduledTime: scheduledTime.toISOString(),
      status: "Pending",
      org: org.orgId,
      replayOf: null,
    });
    const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
    expect(stored).toMatchObject({ orgId: org.orgId, status: "Pending", scheduledTime });
  });

  it("get answers the event with its delivery history", async () => {
    const { org, client } = await organization();
    const sent = await delivered(org, client, receiver.url, "Sent");

    const event = await client.events.get(sent.id);

    expect(event).toMatchObject({ id: sent.id, status: "Sent", sentAt: expect.any(String) });
    expect(event.history).toEqual([
      expect.objectContaining({ attempt: 1, responseStatus: 200, error: null, durationMs: expect.any(Number) }),
    ]);
  });

  it("list pages with the cursor, and listAll follows every page in scheduledTime order", async () => {
    const { client } = await organization();
    const created = [];
    // Created out of order: the list is by scheduledTime, not by creation.
    for (const hours of [5, 1, 4, 2, 3]) {
      created.push(
        await client.events.create({ payload: `${hours}`, destination: receiver.url, scheduledTime: inHours(hours) }),
      );
    }
    const inOrder = [...created]
      .sort((a, b) => a.scheduledTime.localeCompare(b.scheduledTime))
      .map((event) => event.id);

    const first = await client.events.list({ limit: 2 });
    expect(first.events.map((event) => event.id)).toEqual(inOrder.slice(0, 2));
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await client.events.list({ limit: 2, cursor: first.nextCursor ?? "" });
    expect(second.events.map((event) => event.id)).toEqual(inOrder.slice(2, 4));
    const last = await client.events.list({ limit: 2, cursor: second.nextCursor ?? "" });
    expect(last.events.map((event) => event.id)).toEqual(inOrder.slice(4));
    expect(last.nextCursor).toBeNull();

    const all = [];
    for await (const event of client.events.listAll({ limit: 2 })) all.push(event.id);
    expect(all).toEqual(inOrder);
  });

  it("list filters by several statuses and by a time range given as Dates", async () => {
    const { client } = await organization();
    const pending = await client.events.create({ payload: "p", destination: receiver.url, scheduledTime: inHours(1) });
    const cancelled = await client.events.create({
      payload: "c",
      destination: receiver.url,
      scheduledTime: inHours(2),
    });
    await client.events.cancel(cancelled.id);
    const later = await client.events.create({ payload: "l", destination: receiver.url, scheduledTime: inHours(30) });

    const both = await client.events.list({ status: ["Pending", "Cancelled"], scheduledEndDate: inHours(24) });
    expect(both.events.map((event) => event.id)).toEqual([pending.id, cancelled.id]);
    const onlyCancelled = await client.events.list({ status: "Cancelled" });
    expect(onlyCancelled.events.map((event) => event.id)).toEqual([cancelled.id]);
    const fromTomorrow = await client.events.list({ scheduledStartDate: inHours(24) });
    expect(fromTomorrow.events.map((event) => event.id)).toEqual([later.id]);
  });

  it("edit changes a Pending event's payload and time", async () => {
    const { client } = await organization();
    const event = await client.events.create({ payload: "old", destination: receiver.url, scheduledTime: inHours(1) });
    const scheduledTime = inHours(2);

    const edited = await client.events.edit(event.id, { payload: "new", scheduledTime });

    expect(edited).toMatchObject({ id: event.id, payload: "new", scheduledTime: scheduledTime.toISOString() });
    expect((await client.events.get(event.id)).payload).toBe("new");
  });

  it("cancel leaves the event Cancelled", async () => {
    const { client } = await organization();
    const event = await client.events.create({ payload: "x", destination: receiver.url, scheduledTime: inHours(1) });

    expect(await client.events.cancel(event.id)).toMatchObject({ id: event.id, status: "Cancelled" });
    expect(await context.db.event.findUniqueOrThrow({ where: { id: event.id } })).toMatchObject({
      status: "Cancelled",
    });
  });

  it("replay makes a new event of a Sent one, delivered in turn", async () => {
    const { org, client } = await organization();
    const original = await delivered(org, client, receiver.url, "Sent");

    const replay = await client.events.replay(original.id);

    expect(replay).toMatchObject({ replayOf: original.id, payload: original.payload, destination: receiver.url });
    expect(replay.id).not.toBe(original.id);
    await expect.poll(() => receiver.deliveriesOf(replay.id).length).toBe(1);
  });

  it("replayMany replays every Failed To Send event once, answering the new events' ids", async () => {
    const { org, client } = await organization();
    const path = "/replay-many";
    const failed = await delivered(org, client, refusing.url.replace(/\/hook$/, path), "Failed To Send");
    // The replays are answered: Sent, they are no new Failed To Send for the second bulk replay to find.
    accepting.add(path);

    const result = await client.events.replayMany({ status: ["Failed To Send", "Failed To Queue"] });

    expect(result.replayed).toBe(1);
    expect(result.events).toHaveLength(1);
    expect(await client.events.get(result.events[0] ?? "")).toMatchObject({ replayOf: failed.id });
    // Replayed once: a second bulk replay finds nothing new to replay.
    expect(await client.events.replayMany({ status: "Failed To Send" })).toEqual({ replayed: 0, events: [] });
  });

  it("testDelivery sends one signed delivery now and answers what the receiver did", async () => {
    const { client } = await organization();

    const result = await client.events.testDelivery({ destination: receiver.url, payload: '{"ping":true}' });

    expect(result).toMatchObject({ responseStatus: 200, error: null, responseBody: '{"received":true}' });
    const delivery = receiver.deliveries.find((each) => each.rawBody.includes('{\\"ping\\":true}'));
    expect(delivery?.headers["webhook-id"]).toMatch(/^evt_test_/);
  });
});

describe("Idempotency-Key", () => {
  it("a repeated create with the same key answers the first event and creates nothing", async () => {
    const { org, client } = await organization();
    const body = { payload: "once", destination: receiver.url, scheduledTime: inHours(1) };
    const idempotencyKey = `order-${randomBytes(4).toString("hex")}`;

    const first = await client.events.create(body, { idempotencyKey });
    const again = await client.events.create(body, { idempotencyKey });

    expect(again).toEqual(first);
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(1);
  });

  it("another request with a used key is refused with 422 and the server's message", async () => {
    const { org, client } = await organization();
    const idempotencyKey = "order-7";
    await client.events.create(
      { payload: "a", destination: receiver.url, scheduledTime: inHours(1) },
      { idempotencyKey },
    );

    const error = await thrownBy(
      client.events.create({ payload: "b", destination: receiver.url, scheduledTime: inHours(1) }, { idempotencyKey }),
    );

    expect(error).toBeInstanceOf(PunctualError);
    expect(error).toMatchObject({
      status: 422,
      message: "Idempotency-Key was already used with a different request",
      operation: "createEvent",
    });
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(1);
  });

  it("without a key, two identical creates make two events", async () => {
    const { org, client } = await organization();
    const body = { payload: "twice", destination: receiver.url, scheduledTime: inHours(1) };

    const [first, second] = [await client.events.create(body), await client.events.create(body)];

    expect(first.id).not.toBe(second.id);
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(2);
  });
});

describe("errors", () => {
  it("a 400 is a PunctualError with the server's sentence, the status and the body", async () => {
    const { client } = await organization();

    const error = await thrownBy(
      client.events.create({ payload: "x", destination: receiver.url, scheduledTime: new Date(Date.now() - HOUR_MS) }),
    );

    expect(error).toBeInstanceOf(PunctualError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: "PunctualError",
      status: 400,
      message: "Please make sure your scheduled time is in the future",
      operation: "createEvent",
      body: { message: "Please make sure your scheduled time is in the future" },
    });
  });

  it("a 404 names what was not found", async () => {
    const { client } = await organization();

    expect(await thrownBy(client.events.get(MISSING_EVENT))).toMatchObject({
      status: 404,
      message: "Unable to find event",
      operation: "getEvent",
    });
    expect(await thrownBy(client.cronJobs.delete(MISSING_CRON_JOB))).toMatchObject({
      status: 404,
      message: "Unable to find cron job",
      operation: "deleteCronJob",
    });
  });

  it("a 401 for an API key the server does not know, with its RateLimit headers", async () => {
    const client = createPunctualClient({ baseUrl: api.baseUrl, apiKey: "pk_not_a_key_of_this_server" });

    const error = await thrownBy(client.events.list());

    expect(error).toBeInstanceOf(PunctualError);
    expect(error).toMatchObject({ status: 401, message: "Invalid API key", operation: "getManyEvents" });
    expect((error as PunctualError).headers.get("ratelimit-limit")).toBe(String(context.config.RATE_LIMIT_PER_MINUTE));
  });
});

describe("cron jobs", () => {
  const job = { payload: '{"tick":true}', expression: "*/15 * * * *", timezone: "Europe/Paris" };

  it("create, get and list answer the cron job", async () => {
    const { org, client } = await organization();

    const created = await client.cronJobs.create({ ...job, destination: receiver.url });

    expect(created).toMatchObject({
      id: expect.stringMatching(/^cron_/),
      status: "Active",
      org: org.orgId,
      ...job,
      history: [],
      nextExecutionDate: expect.any(String),
    });
    expect(await client.cronJobs.get(created.id)).toMatchObject({ id: created.id, expression: job.expression });
    expect((await client.cronJobs.list()).map((each) => each.id)).toEqual([created.id]);
  });

  it("edit changes the expression and disables the job", async () => {
    const { client } = await organization();
    const created = await client.cronJobs.create({ ...job, destination: receiver.url });

    const edited = await client.cronJobs.edit(created.id, { expression: "0 9 * * 1", status: "Disabled" });

    expect(edited).toMatchObject({ expression: "0 9 * * 1", status: "Disabled", nextExecutionStatus: "Disabled" });
  });

  it("delete removes the job: get then throws 404", async () => {
    const { client } = await organization();
    const created = await client.cronJobs.create({ ...job, destination: receiver.url });

    await expect(client.cronJobs.delete(created.id)).resolves.toBeUndefined();

    expect(await thrownBy(client.cronJobs.get(created.id))).toMatchObject({ status: 404 });
    expect(await client.cronJobs.list()).toEqual([]);
  });

  it("preview answers the next times an expression fires, count as a number", async () => {
    const { client } = await organization();

    const preview = await client.cronJobs.preview({ expression: "0 12 * * *", timezone: "UTC", count: 3 });

    expect(preview).toMatchObject({ expression: "0 12 * * *", timezone: "UTC", neverFires: false });
    expect(preview.times).toHaveLength(3);
    for (const time of preview.times) expect(time).toMatch(/T12:00:00\.000Z$/);
  });

  it("preview refuses an invalid expression with the server's 400", async () => {
    const { client } = await organization();

    const error = await thrownBy(client.cronJobs.preview({ expression: "not a cron" }));

    expect(error).toMatchObject({ status: 400, operation: "previewCronJob", message: expect.any(String) });
    expect((error as PunctualError).body).toEqual({ message: (error as PunctualError).message });
  });
});

describe("flows and destinations", () => {
  it("flows: set, get and list with their counts, pause, resume and delete", async () => {
    const { client } = await organization();

    const set = await client.flows.set("invoices", { rate: 50, periodMs: 1000, parallelism: 5 });
    expect(set).toMatchObject({ flowKey: "invoices", rate: 50, periodMs: 1000, parallelism: 5, paused: false });
    expect(await client.flows.get("invoices")).toMatchObject({ ...set, waiting: 0, inFlight: 0 });
    expect(await client.flows.pause("invoices")).toMatchObject({ paused: true, rate: 50 });
    expect(await client.flows.resume("invoices")).toMatchObject({ paused: false, rate: 50 });
    expect((await client.flows.list()).map((flow) => flow.flowKey)).toEqual(["invoices"]);
    await client.flows.delete("invoices");

    const error = await thrownBy(client.flows.get("invoices"));
    expect(error).toMatchObject({ status: 404, operation: "getFlow", message: "No flow 'invoices'" });
  });

  it("destinations: an origin the worker failed to reach is listed, and reset makes it Healthy", async () => {
    const { org, client } = await organization();
    await delivered(org, client, refusing.url, "Failed To Send");
    const origin = new URL(refusing.url).origin;

    await expect
      .poll(async () => (await client.destinations.list()).find((destination) => destination.origin === origin))
      .toMatchObject({ origin, state: "Healthy", consecutiveFailures: 2 });
    expect(await client.destinations.reset(origin)).toMatchObject({ origin, state: "Healthy", consecutiveFailures: 0 });

    const error = await thrownBy(client.destinations.reset("https://unknown.example"));
    expect(error).toMatchObject({ status: 404, operation: "resetDestination" });
  });
});

describe("stats", () => {
  it("counts the organization's sent and failed deliveries over a window given as Dates", async () => {
    const { org, client } = await organization();
    await delivered(org, client, receiver.url, "Sent");
    await delivered(org, client, refusing.url, "Failed To Send");

    const stats = await client.stats.get({ from: new Date(Date.now() - HOUR_MS), to: inHours(1), bucket: "hour" });

    expect(stats.bucket).toBe("hour");
    expect(stats.totals).toEqual({ sent: 1, failed: 1, retried: 1 });
    expect(stats.usage.used).toBe(2);
  });
});

describe("admin client", () => {
  const admin = () => createPunctualAdminClient({ baseUrl: api.baseUrl, adminToken: ADMIN_TOKEN });
  const email = () => `admin-${randomBytes(5).toString("hex")}@example.com`;

  it("creates an account, and a second with the same email is a 409 with the server's sentence", async () => {
    const address = email();

    expect(await admin().accounts.create({ email: address })).toMatchObject({ id: expect.any(String), email: address });
    expect(await thrownBy(admin().accounts.create({ email: address }))).toMatchObject({
      status: 409,
      message: `An account with email ${address} already exists`,
      operation: "adminCreateAccount",
    });
  });

  it("creates an organization whose API key works with the organization's client, lists it, adds a member", async () => {
    const owner = email();
    const created = await admin().organizations.create({ email: owner, name: "Acme" });

    const client = createPunctualClient({ baseUrl: api.baseUrl, apiKey: created.apiKey });
    expect(await client.events.list()).toEqual({ events: [], nextCursor: null });
    const listed = await admin().organizations.list({ email: owner });
    expect(listed).toEqual([expect.objectContaining({ id: created.orgId, name: "Acme", ownerEmail: owner })]);
    const memberEmail = email();
    await admin().accounts.create({ email: memberEmail });
    expect(await admin().organizations.addMember(created.orgId, { email: memberEmail })).toMatchObject({
      orgId: created.orgId,
      email: memberEmail,
      role: "member",
    });
  });

  it("creates, lists, rotates and revokes API keys; a revoked key is refused with 401", async () => {
    const { orgId } = await admin().organizations.create({ email: email(), name: "Keys" });

    const extra = await admin().apiKeys.create(orgId);
    expect((await admin().apiKeys.list(orgId)).map((key) => key.id)).toContain(extra.keyId);
    const rotated = await admin().apiKeys.rotate(extra.keyId);
    expect(rotated).toMatchObject({ orgId, revokedKeyId: extra.keyId });
    const revoked = await admin().apiKeys.revoke(rotated.keyId);
    expect(revoked).toMatchObject({ keyId: rotated.keyId, revokedAt: expect.any(String) });

    for (const apiKey of [extra.apiKey, rotated.apiKey]) {
      const refused = await thrownBy(createPunctualClient({ baseUrl: api.baseUrl, apiKey }).cronJobs.list());
      expect(refused).toMatchObject({ status: 401, message: "Invalid API key" });
    }
  });

  it("rotates the signing secret with an overlap and ends the overlap", async () => {
    const { orgId, signingSecret } = await admin().organizations.create({ email: email(), name: "Secrets" });

    const rotated = await admin().signingSecrets.rotate(orgId);
    expect(rotated).toMatchObject({ orgId, signingSecret: expect.stringMatching(/^whsec_/) });
    expect(rotated.signingSecret).not.toBe(signingSecret);
    expect(Date.parse(rotated.previousSecretValidUntil ?? "")).toBeGreaterThan(Date.now());
    const custom = await admin().signingSecrets.rotate(orgId, { signingSecret: "our own secret of 24+ characters" });
    expect(custom.signingSecret).toBe("our own secret of 24+ characters");

    expect(await admin().signingSecrets.endOverlap(orgId)).toEqual({ orgId, previousSecretValidUntil: null });
  });

  it("answers the service's health", async () => {
    const health = await admin().serviceHealth();

    expect(health.queues.events).toEqual({
      waiting: expect.any(Number),
      delayed: expect.any(Number),
      active: expect.any(Number),
      failed: expect.any(Number),
    });
    expect(health.workers).toEqual(expect.any(Array));
  });

  it("a wrong admin token is a 401 PunctualError", async () => {
    const wrong = createPunctualAdminClient({ baseUrl: api.baseUrl, adminToken: "not-the-admin-token-of-this" });

    expect(await thrownBy(wrong.organizations.list())).toMatchObject({
      status: 401,
      message: "Invalid admin token",
      operation: "adminListOrganizations",
    });
  });
});

describe("http", () => {
  it("is the typed openapi-fetch client underneath, authenticated, for calls no method covers", async () => {
    const { client } = await organization();
    const event = await client.events.create({ payload: "raw", destination: receiver.url, scheduledTime: inHours(1) });

    const { data, response } = await client.http.GET("/api/events/{eventId}", {
      params: { path: { eventId: event.id } },
    });

    expect(response.status).toBe(200);
    expect(data?.payload).toBe("raw");
  });
});
