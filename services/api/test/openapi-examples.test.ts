import { systemClock } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { POLICY_REFUSAL_CASES, RAW_PAYLOAD_REFUSAL } from "../../../test/support/delivery-policy.ts";
import { createApp } from "../src/app.ts";
import { createOpenApiDocument } from "../src/openapi/openapi-document.ts";

// The document's 400 examples are the messages a client will read, so each must be one its route
// really answers. For every operation with 400 examples, the requests below are sent to the app and
// the messages answered must be exactly the documented ones: an example no request produces (a
// message of another route, or one no longer given) fails, and so does a request whose answer the
// document does not list. A new route with 400 examples needs its requests here.

const ADMIN_TOKEN = "adm_Tq7wE3nZk9Rb5Lx2Vm8Hc4";
const DAY_MS = 24 * 60 * 60 * 1000;

interface Sent {
  method: "get" | "post" | "put" | "delete";
  path: string;
  query?: Record<string, string>;
  /** A JSON body; a string is sent as it is, with the JSON content type. */
  body?: object | string;
  headers?: Record<string, string>;
}

interface Fixtures {
  org: TestOrganization;
  pendingEventId: string;
  sentEventId: string;
  cronJobId: string;
  revokedKeyId: string;
}

let context: TestContext;
let app: ReturnType<typeof createApp>;
let fixtures: Fixtures;

const future = () => new Date(Date.now() + DAY_MS).toISOString();
const event = (fields: object = {}) => ({
  payload: "{}",
  destination: "https://example.com/examples",
  scheduledTime: future(),
  ...fields,
});
const cronJob = (fields: object = {}) => ({
  payload: "{}",
  destination: "https://example.com/examples",
  expression: "0 * * * *",
  ...fields,
});

/** A create body without its null fields (a create takes no null: the timing's nulls are an edit's). */
const stripNulls = (body: object) => Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null));

/** One request per delivery policy refusal (contract §10.1), the raw-body rule included. */
function policyTriggers(method: Sent["method"], path: string, base: object): Sent[] {
  return [...POLICY_REFUSAL_CASES, RAW_PAYLOAD_REFUSAL].map(({ fields }) => ({
    method,
    path,
    body: { ...base, ...fields },
  }));
}

/**
 * One timing field per refusal (contract §10.4), each on its own; `soon` is a time before an
 * hourly interval's first firing.
 */
function timingFieldRefusals(): object[] {
  return [
    { every: "every minute" },
    { every: "PT0.5S" },
    { every: "P400D" },
    { startAt: "soon" },
    { startAt: "2099-12-01T10:00:00" },
    { endAt: "soon" },
    { endAt: "2099-12-01T10:00:00" },
    { maxRuns: 0 },
    { catchUp: "some" },
    { catchUpWindowMs: 999 },
    { overlap: "queue" },
    { jitterMs: 3_600_001 },
  ];
}

/** A timing that contradicts itself or never fires (contract §10.4). */
function timingWholeRefusals(): object[] {
  const soon = new Date(Date.now() + 30 * 60_000).toISOString();
  return [
    { expression: "0 * * * *", every: "PT1H" },
    { startAt: "2099-12-02T00:00:00Z", endAt: "2099-12-01T00:00:00Z" },
    { endAt: "2000-01-01T00:00:00Z" },
    { expression: null, every: "PT1H", endAt: soon },
  ];
}

/** A flow key one character too long (contract §10.2), in a body or a path. */
const LONG_FLOW_KEY = "k".repeat(65);

/** One `labels` per refusal (contract §10.5), as a create or an edit gives them. */
const LABEL_REFUSAL_CASES: object[] = [
  { labels: "team" },
  { labels: Object.fromEntries(Array.from({ length: 11 }, (_, n) => [`k${n}`, "v"])) },
  { labels: { Team: "a" } },
  { labels: { team: 1 } },
  { labels: { team: "x".repeat(257) } },
];

/** Eleven `label` filters: one too many. */
const ELEVEN_LABELS = Array.from({ length: 11 }, (_, n) => `k${n}:v`);

/** For each operation with 400 examples, requests that answer 400 — one or more per example. */
function triggers(f: Fixtures, maxPayloadBytes: number): Record<string, Sent[]> {
  const tooLarge = "x".repeat(maxPayloadBytes + 1);
  const noZone = "2099-12-01T10:00:00";
  const past = "2000-01-01T00:00:00Z";
  const longAgo = new Date(Date.now() - 3650 * DAY_MS).toISOString();
  const orgKeys = "/api/admin/organizations/org_/keys";
  return {
    createEvent: [
      { method: "post", path: "/api/events", body: event({ scheduledTime: "soon" }) },
      { method: "post", path: "/api/events", body: event({ scheduledTime: noZone }) },
      { method: "post", path: "/api/events", body: event({ scheduledTime: past }) },
      { method: "post", path: "/api/events", body: event({ payload: tooLarge }) },
      { method: "post", path: "/api/events", body: event({ destination: "ftp://example.com/" }) },
      { method: "post", path: "/api/events", body: event({ destination: "http://127.0.0.1/" }) },
      { method: "post", path: "/api/events", body: { destination: "https://example.com/", scheduledTime: future() } },
      { method: "post", path: "/api/events", body: event({ payloadd: "{}" }) },
      { method: "post", path: "/api/events", body: "{" },
      ...policyTriggers("post", "/api/events", event()),
      { method: "post", path: "/api/events", body: event({ flowKey: LONG_FLOW_KEY }) },
      ...LABEL_REFUSAL_CASES.map((fields): Sent => ({ method: "post", path: "/api/events", body: event(fields) })),
    ],
    createEvents: [
      {
        method: "post",
        path: "/api/events/batch",
        body: { events: [event(), event(), event(), event({ scheduledTime: past })] },
      },
      { method: "post", path: "/api/events/batch", body: { events: [{ destination: "https://example.com/" }] } },
      { method: "post", path: "/api/events/batch", body: {} },
      { method: "post", path: "/api/events/batch", body: { events: Array.from({ length: 1001 }, () => event()) } },
      {
        method: "post",
        path: "/api/events/batch",
        body: { events: [event()] },
        headers: { "idempotency-key": "k1" },
      },
    ],
    cancelEvents: [
      { method: "post", path: "/api/events/cancel", body: {} },
      { method: "post", path: "/api/events/cancel", body: { status: "Done" } },
      { method: "post", path: "/api/events/cancel", body: { scheduledStartDate: "yesterday" } },
      { method: "post", path: "/api/events/cancel", body: { sentAtStartDate: longAgo } },
      { method: "post", path: "/api/events/cancel", body: { flowKey: LONG_FLOW_KEY } },
      { method: "post", path: "/api/events/cancel", body: { label: "customer" } },
      { method: "post", path: "/api/events/cancel", body: { label: ELEVEN_LABELS } },
      { method: "post", path: "/api/events/cancel", body: { status: "Pending", foo: 1 } },
    ],
    createWebhook: [
      { method: "post", path: "/api/webhooks", body: { types: ["event.failed"] } },
      { method: "post", path: "/api/webhooks", body: { url: "ftp://example.com/", types: ["event.failed"] } },
      { method: "post", path: "/api/webhooks", body: { url: "http://127.0.0.1/", types: ["event.failed"] } },
      { method: "post", path: "/api/webhooks", body: { url: "https://example.com/", types: ["event.sent"] } },
    ],
    getManyEvents: [
      { method: "get", path: "/api/events", query: { status: "Done" } },
      { method: "get", path: "/api/events", query: { scheduledStartDate: "yesterday" } },
      { method: "get", path: "/api/events", query: { sentAtStartDate: longAgo } },
      { method: "get", path: "/api/events", query: { failedAtStartDate: longAgo } },
      { method: "get", path: "/api/events", query: { cursor: "not-a-cursor" } },
      { method: "get", path: "/api/events", query: { order: "newest" } },
      { method: "get", path: "/api/events", query: { foo: "1" } },
      { method: "get", path: "/api/events", query: { flowKey: LONG_FLOW_KEY } },
      { method: "get", path: "/api/events", query: { label: "customer" } },
      { method: "get", path: `/api/events?${ELEVEN_LABELS.map((label) => `label=${label}`).join("&")}` },
    ],
    editEvent: [
      { method: "put", path: `/api/events/${f.sentEventId}`, body: { status: "Cancelled" } },
      { method: "put", path: `/api/events/${f.pendingEventId}`, body: { status: "Sent" } },
      { method: "put", path: `/api/events/${f.pendingEventId}`, body: { scheduledTime: past } },
      { method: "put", path: `/api/events/${f.pendingEventId}`, body: { scheduledTime: noZone } },
      { method: "put", path: `/api/events/${f.pendingEventId}`, body: { destination: "http://127.0.0.1/" } },
      ...policyTriggers("put", `/api/events/${f.pendingEventId}`, {}),
      { method: "put", path: `/api/events/${f.pendingEventId}`, body: { flowKey: "a b" } },
      ...LABEL_REFUSAL_CASES.map(
        (fields): Sent => ({ method: "put", path: `/api/events/${f.pendingEventId}`, body: fields }),
      ),
    ],
    replayEvent: [
      { method: "post", path: `/api/events/${f.pendingEventId}/replay` },
      { method: "post", path: `/api/events/${f.sentEventId}/replay`, body: { scheduledTime: past } },
      { method: "post", path: `/api/events/${f.sentEventId}/replay`, body: { scheduledTime: noZone } },
      { method: "post", path: `/api/events/${f.sentEventId}/replay`, body: { scheduledTime: "soon" } },
    ],
    replayEvents: [
      { method: "post", path: "/api/events/replay", body: {} },
      { method: "post", path: "/api/events/replay", body: { status: "Sent" } },
      { method: "post", path: "/api/events/replay", body: { status: "Failed To Send", failedAtStartDate: "x" } },
      { method: "post", path: "/api/events/replay", body: { status: "Failed To Send", failedAtStartDate: longAgo } },
      { method: "post", path: "/api/events/replay", body: { status: "Failed To Send", foo: 1 } },
    ],
    testDelivery: [
      { method: "post", path: "/api/events/test", body: { destination: "ftp://example.com/" } },
      { method: "post", path: "/api/events/test", body: { destination: "http://127.0.0.1/" } },
      { method: "post", path: "/api/events/test", body: { destination: "https://example.com/", payload: tooLarge } },
      { method: "post", path: "/api/events/test", body: {} },
      ...policyTriggers("post", "/api/events/test", { destination: "https://example.com/" }),
    ],
    createCronJob: [
      { method: "post", path: "/api/cronjobs", body: cronJob({ expression: "every minute" }) },
      { method: "post", path: "/api/cronjobs", body: cronJob({ expression: "0 0 30 2 *" }) },
      { method: "post", path: "/api/cronjobs", body: cronJob({ timezone: "Mars/Olympus_Mons" }) },
      ...timingFieldRefusals().map(
        (fields): Sent => ({ method: "post", path: "/api/cronjobs", body: cronJob(fields) }),
      ),
      ...timingWholeRefusals().map(
        (fields): Sent => ({ method: "post", path: "/api/cronjobs", body: stripNulls(cronJob(fields)) }),
      ),
      { method: "post", path: "/api/cronjobs", body: cronJob({ payload: tooLarge }) },
      { method: "post", path: "/api/cronjobs", body: cronJob({ destination: "ftp://example.com/" }) },
      { method: "post", path: "/api/cronjobs", body: cronJob({ destination: "http://127.0.0.1/" }) },
      ...policyTriggers("post", "/api/cronjobs", cronJob()),
      { method: "post", path: "/api/cronjobs", body: cronJob({ flowKey: 42 }) },
    ],
    editCronJob: [
      { method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: { status: "Paused" } },
      { method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: { expression: "every minute" } },
      { method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: { expression: "0 0 30 2 *" } },
      { method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: { timezone: "Mars/Olympus_Mons" } },
      ...[...timingFieldRefusals(), ...timingWholeRefusals()].map(
        (fields): Sent => ({ method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: fields }),
      ),
      { method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: { destination: "http://127.0.0.1/" } },
      ...policyTriggers("put", `/api/cronjobs/${f.cronJobId}`, {}),
      { method: "put", path: `/api/cronjobs/${f.cronJobId}`, body: { flowKey: "" } },
    ],
    getFlow: [{ method: "get", path: `/api/flows/${LONG_FLOW_KEY}` }],
    setFlow: [
      { method: "put", path: `/api/flows/${LONG_FLOW_KEY}`, body: { rate: 10 } },
      { method: "put", path: "/api/flows/examples", body: { rate: 0 } },
      { method: "put", path: "/api/flows/examples", body: { rate: 10, periodMs: 999 } },
      { method: "put", path: "/api/flows/examples", body: { parallelism: 1001 } },
      { method: "put", path: "/api/flows/examples", body: { rate: 10, paused: true } },
    ],
    deleteFlow: [{ method: "delete", path: `/api/flows/${LONG_FLOW_KEY}` }],
    pauseFlow: [
      { method: "post", path: `/api/flows/${LONG_FLOW_KEY}/pause` },
      { method: "post", path: "/api/flows/examples/pause", body: { until: "2030-01-01T00:00:00Z" } },
    ],
    resumeFlow: [
      { method: "post", path: `/api/flows/${LONG_FLOW_KEY}/resume` },
      { method: "post", path: "/api/flows/examples/resume", body: { until: "2030-01-01T00:00:00Z" } },
    ],
    resetDestination: [
      { method: "post", path: "/api/destinations/reset", body: {} },
      { method: "post", path: "/api/destinations/reset", body: { origin: "https://example.com/hook" } },
      { method: "post", path: "/api/destinations/reset", body: { url: "https://example.com" } },
    ],
    setDeliveryPolicy: [
      ...POLICY_REFUSAL_CASES.map(
        ({ fields }): Sent => ({ method: "put", path: "/api/delivery-policy", body: fields }),
      ),
      { method: "put", path: "/api/delivery-policy", body: { methd: "POST" } },
    ],
    previewCronJob: [
      { method: "get", path: "/api/cron-jobs/preview" },
      { method: "get", path: "/api/cron-jobs/preview", query: { expression: "every minute" } },
      {
        method: "get",
        path: "/api/cron-jobs/preview",
        query: { expression: "0 * * * *", timezone: "Mars/Olympus_Mons" },
      },
      { method: "get", path: "/api/cron-jobs/preview", query: { expression: "0 * * * *", count: "50" } },
      ...timingFieldRefusals().map(
        (fields): Sent => ({
          method: "get",
          path: "/api/cron-jobs/preview",
          query: { expression: "0 * * * *", ...(fields as Record<string, string | number>) } as Record<string, string>,
        }),
      ),
      {
        method: "get",
        path: "/api/cron-jobs/preview",
        query: { expression: "0 * * * *", startAt: "2099-12-02T00:00:00Z", endAt: "2099-12-01T00:00:00Z" },
      },
      { method: "get", path: "/api/cron-jobs/preview", query: { expression: "0 * * * *", foo: "1" } },
    ],
    getStats: [
      { method: "get", path: "/api/stats", query: { from: "yesterday" } },
      { method: "get", path: "/api/stats", query: { to: "tomorrow" } },
      { method: "get", path: "/api/stats", query: { to: "0001-01-01T05:00:00Z" } },
      { method: "get", path: "/api/stats", query: { from: "2026-01-02T00:00:00Z", to: "2026-01-01T00:00:00Z" } },
      { method: "get", path: "/api/stats", query: { from: "2026-01-01T00:00:00Z", to: "2026-03-01T00:00:00Z" } },
      { method: "get", path: "/api/stats", query: { bucket: "week" } },
      { method: "get", path: "/api/stats", query: { foo: "1" } },
    ],
    adminCreateAccount: [
      { method: "post", path: "/api/admin/accounts", body: {} },
      { method: "post", path: "/api/admin/accounts", body: { email: "not-an-email" } },
      { method: "post", path: "/api/admin/accounts", body: { email: "a@example.com", plan: "pro" } },
    ],
    adminCreateOrganization: [
      { method: "post", path: "/api/admin/organizations", body: { email: "not-an-email", name: "Acme" } },
      { method: "post", path: "/api/admin/organizations", body: { email: "a@example.com", name: " " } },
      { method: "post", path: "/api/admin/organizations", body: { email: "a@example.com", name: "\ufeffAcme" } },
      {
        method: "post",
        path: "/api/admin/organizations",
        body: { email: "a@example.com", name: "Acme", signingSecret: "short" },
      },
      { method: "post", path: "/api/admin/organizations", body: { email: "a@example.com", name: "Acme", plan: "pro" } },
    ],
    adminListOrganizations: [
      { method: "get", path: "/api/admin/organizations?email=a@example.com&email=b@example.com" },
      { method: "get", path: "/api/admin/organizations", query: { mail: "a@example.com" } },
      { method: "get", path: "/api/admin/organizations", query: { email: "not-an-email" } },
    ],
    adminAddMember: [
      { method: "post", path: "/api/admin/organizations/acme/members", body: { email: "a@example.com" } },
      { method: "post", path: `/api/admin/organizations/${f.org.orgId}/members`, body: { email: "not-an-email" } },
      {
        method: "post",
        path: `/api/admin/organizations/${f.org.orgId}/members`,
        body: { email: "a@example.com", plan: "pro" },
      },
    ],
    adminCreateApiKey: [
      { method: "post", path: orgKeys },
      { method: "post", path: `/api/admin/organizations/${f.org.orgId}/keys`, body: { plan: "pro" } },
    ],
    adminListApiKeys: [{ method: "get", path: orgKeys }],
    adminListMembers: [{ method: "get", path: "/api/admin/organizations/acme/members" }],
    adminRotateSigningSecret: [
      { method: "post", path: "/api/admin/organizations/acme/signing-secret/rotate" },
      {
        method: "post",
        path: `/api/admin/organizations/${f.org.orgId}/signing-secret/rotate`,
        body: { signingSecret: "short" },
      },
      { method: "post", path: `/api/admin/organizations/${f.org.orgId}/signing-secret/rotate`, body: { plan: "pro" } },
    ],
    adminEndSigningSecretOverlap: [
      { method: "post", path: "/api/admin/organizations/acme/signing-secret/end-overlap" },
    ],
    adminRevokeApiKey: [
      { method: "post", path: "/api/admin/keys/acme/revoke" },
      { method: "post", path: `/api/admin/keys/${f.revokedKeyId}/revoke`, body: { plan: "pro" } },
    ],
    adminRotateApiKey: [
      { method: "post", path: `/api/admin/keys/${f.revokedKeyId}/rotate` },
      { method: "post", path: "/api/admin/keys/acme/rotate" },
      { method: "post", path: `/api/admin/keys/${f.revokedKeyId}/rotate`, body: { plan: "pro" } },
    ],
    openConsoleSession: [{ method: "post", path: "/console/api/session", body: {} }],
    openOperatorSession: [{ method: "post", path: "/console/api/operator-session", body: {} }],
  };
}

/** The documented 400 examples of each operation that has some. */
function documentedExamples(): Map<string, string[]> {
  type Operation = {
    operationId: string;
    responses: Record<string, { content?: { "application/json"?: { examples?: object } } }>;
  };
  const document = createOpenApiDocument(context.config) as { paths: Record<string, Record<string, Operation>> };
  const examples = new Map<string, string[]>();
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item)) {
      const shown = operation.responses["400"]?.content?.["application/json"]?.examples;
      if (!shown) continue;
      const messages = Object.values(shown).map((example: { value: { message: string } }) => example.value.message);
      examples.set(operation.operationId, messages);
    }
  }
  return examples;
}

async function answer(sent: Sent): Promise<{ status: number; body: unknown }> {
  const call = request(app)[sent.method](sent.path);
  const path = sent.path.startsWith("/api/admin/") ? "admin" : sent.path.startsWith("/console/") ? "console" : "api";
  if (path === "admin") call.set("authorization", `Bearer ${ADMIN_TOKEN}`);
  if (path === "api") call.set("x-api-key", fixtures.org.apiKey);
  if (sent.query) call.query(sent.query);
  for (const [name, value] of Object.entries(sent.headers ?? {})) call.set(name, value);
  if (typeof sent.body === "string") call.set("content-type", "application/json").send(sent.body);
  else if (sent.body) call.send(sent.body);
  const response = await call;
  return { status: response.status, body: response.body };
}

beforeAll(async () => {
  context = await createTestContext({
    ADMIN_TOKEN,
    // The document shows "Destination address is not allowed": private destinations are refused.
    ALLOW_PRIVATE_DESTINATIONS: "false",
    RATE_LIMIT_PER_MINUTE: "100000",
  });
  app = createApp(createTestApiDeps(context, systemClock).deps);
  const org = await createTestOrganization(context);
  const created = async (path: string, body: object) => {
    const response = await request(app).post(path).set("x-api-key", org.apiKey).send(body);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.id as string;
  };
  const pendingEventId = await created("/api/events", event());
  const sentEventId = await created("/api/events", event());
  await context.db.$executeRaw`UPDATE events SET status = 'Sent', sent_at = now() WHERE id = ${sentEventId}`;
  const cronJobId = await created("/api/cronjobs", cronJob());
  const other = await createTestOrganization(context);
  const { id: revokedKeyId } = await context.db.apiKey.findFirstOrThrow({ where: { orgId: other.orgId } });
  const revoked = await request(app)
    .post(`/api/admin/keys/${revokedKeyId}/revoke`)
    .set("authorization", `Bearer ${ADMIN_TOKEN}`);
  expect(revoked.status).toBe(200);
  fixtures = { org, pendingEventId, sentEventId, cronJobId, revokedKeyId };
});
afterAll(() => context.close());

describe("the document's 400 examples", () => {
  it("name every operation that has some, and only those, among the requests here", () => {
    const documented = [...documentedExamples().keys()].sort();
    expect(Object.keys(triggers(fixtures, context.config.MAX_PAYLOAD_BYTES)).sort()).toEqual(documented);
  });

  it("are exactly what each route answers", async () => {
    const documented = documentedExamples();
    const mismatches: string[] = [];
    for (const [operationId, sent] of Object.entries(triggers(fixtures, context.config.MAX_PAYLOAD_BYTES))) {
      const answered = new Set<string>();
      for (const one of sent) {
        const { status, body } = await answer(one);
        const message = (body as { message?: string }).message ?? JSON.stringify(body);
        if (status !== 400) mismatches.push(`${operationId}: ${JSON.stringify(one)} answered ${status} ${message}`);
        else answered.add(message);
      }
      const examples = documented.get(operationId) ?? [];
      for (const message of examples) {
        if (!answered.has(message)) mismatches.push(`${operationId}: documented, never answered: ${message}`);
      }
      for (const message of answered) {
        if (!examples.includes(message)) mismatches.push(`${operationId}: answered, not documented: ${message}`);
      }
    }
    expect(mismatches).toEqual([]);
  });
});
