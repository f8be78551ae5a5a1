import { DAY_MS, fixedClock, newId } from "@punctual/core";
import fc from "fast-check";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../services/api/src/app.ts";
import { createRetention } from "../../services/worker/src/maintenance/retention.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";

// Retention (services/worker/src/maintenance/retention.ts) and the API's visibility rule (contract
// §3, services/api/src/events/event-queries.ts) are two rule sets about the same rows: retention must
// never delete an event that GET /api/events/:id still shows. Property: for any set of events
// (statuses, and scheduled, sent, failed and last-change times around now and around the search
// window's edge), every event the API shows before a retention run it still shows after it, with
// the API and the run at the same instant.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 60);
const NOW = new Date("2031-06-15T12:00:00.000Z");
const clock = fixedClock(NOW);

let context: TestContext;
let org: TestOrganization;
let app: ReturnType<typeof createApp>;
let retain: ReturnType<typeof createRetention>;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "1000000" });
  org = await createTestOrganization(context);
  app = createApp(createTestApiDeps(context, clock).deps);
  // Small batches, so that a run goes through several of them.
  retain = createRetention({
    db: context.db,
    clock,
    config: { ...context.config, RETENTION_BATCH_SIZE: 3 },
    logger: context.logger,
  });
});
afterAll(() => context.close());

/** An instant relative to NOW: on and next to the edges both rule sets use, or anywhere nearby. */
function instant(): fc.Arbitrary<Date> {
  const searchEdge = -context.config.SEARCH_WINDOW_DAYS * DAY_MS;
  const historyEdge = -context.config.HISTORY_DAYS * DAY_MS;
  const edges = [searchEdge, historyEdge, 0].flatMap((edge) => [edge - 1, edge, edge + 1]);
  return fc
    .oneof(fc.constantFrom(...edges), fc.integer({ min: -60 * DAY_MS, max: 30 * DAY_MS }))
    .map((offset) => new Date(NOW.getTime() + offset));
}

interface GeneratedEvent {
  status: string;
  scheduledTime: Date;
  sentAt: Date | null;
  failedAt: Date | null;
  updatedAt: Date;
  /** Times of its attempts (history rows). */
  attempts: Date[];
}

/** An event as the lifecycle leaves it in each status (which of sentAt and failedAt it has). */
function event(): fc.Arbitrary<GeneratedEvent> {
  const at = instant();
  const attempts = fc.array(at, { maxLength: 3 });
  const base = { scheduledTime: at, updatedAt: at, attempts };
  return fc.oneof(
    fc.record({
      ...base,
      status: fc.constantFrom("Pending", "Queued"),
      sentAt: fc.constant(null),
      failedAt: fc.constant(null),
    }),
    fc.record({ ...base, status: fc.constant("Sent"), sentAt: at, failedAt: fc.constant(null) }),
    fc.record({
      ...base,
      status: fc.constantFrom("Failed To Send", "Failed To Queue"),
      sentAt: fc.constant(null),
      failedAt: at,
    }),
    fc.record({ ...base, status: fc.constant("Cancelled"), sentAt: fc.constant(null), failedAt: fc.constant(null) }),
  );
}

async function insert(generated: GeneratedEvent): Promise<string> {
  const id = newId("evt");
  await context.db.$executeRaw`
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at)
    VALUES (${id}, ${org.orgId}, 'https://example.com/e', 'p', ${generated.scheduledTime}, ${generated.status},
            ${generated.sentAt}, ${generated.failedAt}, ${new Date(NOW.getTime() - 90 * DAY_MS)}, ${generated.updatedAt})`;
  for (const [n, at] of generated.attempts.entries()) {
    await context.db.$executeRaw`
      INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
      VALUES (${id}, ${n + 1}, ${at}, 503, 10, 'HTTP 503')`;
  }
  return id;
}

/** The status GET /api/events/:id answers for each id: 200 when shown, 404 when not. */
async function shown(ids: string[]): Promise<string[]> {
  const shownIds: string[] = [];
  for (const id of ids) {
    const response = await request(app).get(`/api/events/${id}`).set("x-api-key", org.apiKey);
    expect([200, 404]).toContain(response.status);
    if (response.status === 200) shownIds.push(id);
  }
  return shownIds;
}

describe("retention and the API's visibility", () => {
  it("retention never deletes an event that GET /api/events/:id shows", async () => {
    let sawDeleted = false;
    let sawKept = false;
    await fc.assert(
      fc.asyncProperty(fc.array(event(), { minLength: 1, maxLength: 12 }), async (events) => {
        await context.db.event.deleteMany({ where: { orgId: org.orgId } });
        const ids = [];
        for (const generated of events) ids.push(await insert(generated));

        const before = await shown(ids);
        const report = await retain();
        expect(report.complete).toBe(true);
        const after = await shown(ids);

        expect(after).toEqual(before);
        const remaining = await context.db.event.count({ where: { orgId: org.orgId } });
        if (remaining < ids.length) sawDeleted = true;
        if (before.length > 0) sawKept = true;
      }),
      { numRuns: RUNS },
    );
    // The property was tried both where retention deleted something and where the API showed
    // something: it cannot hold only because one side never acted.
    expect(sawDeleted).toBe(true);
    expect(sawKept).toBe(true);
  }, 120_000);
});
