import { refusedDestinationMessage } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

// Contract §5: with ALLOW_PRIVATE_DESTINATIONS=false, a destination whose host is a well-known
// name of the loopback interface is refused when an event or cron job is created or edited, with
// the words used for a literal private address; with it true, it is accepted.

const LOOPBACK_NAMES = [
  "localhost",
  "LOCALHOST",
  "localhost.",
  "api.localhost",
  "a.b.localhost.",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
  "localhost6",
  "%6cocalhost",
];

let context: TestContext;
let strict: ReturnType<typeof createApp>;
let permissive: ReturnType<typeof createApp>;
let org: TestOrganization;
let eventId: string;
let cronJobId: string;

const tomorrow = () => new Date(Date.now() + 24 * 60 * 60 * 1000).toISOString();
const event = (destination: string) => ({ payload: "p", destination, scheduledTime: tomorrow() });
const cronJob = (destination: string) => ({ payload: "p", destination, expression: "0 0 1 1 *" });

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "10000" });
  const { deps } = createTestApiDeps(context);
  strict = createApp({ ...deps, config: { ...deps.config, ALLOW_PRIVATE_DESTINATIONS: false } });
  permissive = createApp({ ...deps, config: { ...deps.config, ALLOW_PRIVATE_DESTINATIONS: true } });
  org = await createTestOrganization(context);
  eventId = (
    await request(strict).post("/api/events").set("x-api-key", org.apiKey).send(event("https://example.com/h"))
  ).body.id;
  cronJobId = (
    await request(strict).post("/api/cronjobs").set("x-api-key", org.apiKey).send(cronJob("https://example.com/h"))
  ).body.id;
  expect([eventId, cronJobId]).toEqual([expect.any(String), expect.any(String)]);
});
afterAll(() => context.close());

const counts = async () =>
  (
    await context.db.$queryRaw<{ events: number; cron_jobs: number }[]>`
      SELECT (SELECT count(*)::int FROM events) AS events, (SELECT count(*)::int FROM cron_jobs) AS cron_jobs`
  )[0];

describe("ALLOW_PRIVATE_DESTINATIONS=false", () => {
  it.each(LOOPBACK_NAMES)("refuses http://%s:8080/hook at create and edit, for events and cron jobs", async (host) => {
    const destination = `http://${host}:8080/hook`;
    const before = await counts();
    const calls = [
      request(strict).post("/api/events").send(event(destination)),
      request(strict).put(`/api/events/${eventId}`).send({ destination }),
      request(strict).post("/api/cronjobs").send(cronJob(destination)),
      request(strict).put(`/api/cronjobs/${cronJobId}`).send({ destination }),
    ];
    for (const call of calls) {
      const response = await call.set("x-api-key", org.apiKey);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 400,
        body: { message: refusedDestinationMessage(new URL(destination).hostname) },
      });
    }
    expect(await counts()).toEqual(before);
  });

  it("accepts names that only look like loopback ones", async () => {
    for (const host of ["localhost.example.com", "mylocalhost.com", "localhostx"]) {
      const response = await request(strict)
        .put(`/api/events/${eventId}`)
        .set("x-api-key", org.apiKey)
        .send({ destination: `https://${host}/hook` });
      expect({ host, status: response.status }).toEqual({ host, status: 200 });
    }
  });
});

describe("ALLOW_PRIVATE_DESTINATIONS=true", () => {
  it("accepts loopback names for events and cron jobs", async () => {
    for (const host of ["localhost", "api.localhost", "ip6-localhost"]) {
      const destination = `http://${host}:8080/hook`;
      const edited = await request(permissive).put(`/api/events/${eventId}`).set("x-api-key", org.apiKey).send({
        destination,
      });
      expect({ host, status: edited.status, destination: edited.body.destination }).toEqual({
        host,
        status: 200,
        destination,
      });
      const cron = await request(permissive)
        .put(`/api/cronjobs/${cronJobId}`)
        .set("x-api-key", org.apiKey)
        .send({ destination });
      expect({ host, status: cron.status }).toEqual({ host, status: 200 });
    }
  });
});
