import { createDb } from "@punctual/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../../test/support/context.ts";
import { AppError } from "../errors.ts";
import { createEventCreator, type NewEvent } from "./event-creator.ts";

// Creates that arrive together share one statement: each must still get exactly the answer it
// would get alone, with the monthly quota exact, against the real Postgres.

const LIMIT = 10;
const NOW = new Date("2030-01-05T00:00:00.000Z");
const JANUARY = new Date("2030-01-20T10:00:00.000Z");
const FEBRUARY = new Date("2030-02-20T10:00:00.000Z");

let context: TestContext;

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

const input = (org: TestOrganization, scheduledTime = JANUARY, n = 0): NewEvent => ({
  orgId: org.orgId,
  payload: `{"n":${n}}`,
  destination: `https://example.com/hook/${n}`,
  scheduledTime,
});

async function usage(org: TestOrganization, month: string): Promise<number> {
  const rows = await context.db.$queryRaw<{ count: number }[]>`
    SELECT count FROM event_monthly_usage WHERE org_id = ${org.orgId} AND month = ${month}::date`;
  return rows[0]?.count ?? 0;
}

/** The stored events; `xmin` is the transaction that wrote the row (one per statement here). */
const rowsOf = (org: TestOrganization) =>
  context.db.$queryRaw<{ id: string; payload: string; destination: string; status: string; xmin: string }[]>`
    SELECT id, payload, destination, status, xmin::text FROM events WHERE org_id = ${org.orgId}`;

/** Starts every create in the same turn of the event loop (one batch), and settles them all. */
const together = (creator: ReturnType<typeof createEventCreator>, inputs: NewEvent[]) =>
  Promise.allSettled(inputs.map((event) => creator.create(event, NOW)));

describe("createEventCreator", () => {
  it("creates concurrent events of several organizations and months, each as asked", async () => {
    const creator = createEventCreator(context.db, LIMIT);
    const [a, b] = [await createTestOrganization(context), await createTestOrganization(context)];
    const inputs = [
      ...Array.from({ length: 6 }, (_, n) => input(a, JANUARY, n)),
      ...Array.from({ length: 3 }, (_, n) => input(a, FEBRUARY, 10 + n)),
      ...Array.from({ length: 5 }, (_, n) => input(b, JANUARY, 20 + n)),
    ];
    const results = await together(creator, inputs);

    const created = results.map((result) => (result.status === "fulfilled" ? result.value : undefined));
    expect(created.every((result) => result?.created === true)).toBe(true);
    created.forEach((result, n) => {
      expect(result?.event).toMatchObject({
        orgId: inputs[n]?.orgId,
        payload: inputs[n]?.payload,
        destination: inputs[n]?.destination,
        scheduledTime: inputs[n]?.scheduledTime,
        status: "Pending",
        createdAt: NOW,
      });
    });
    expect(new Set(created.map((result) => result?.event.id)).size).toBe(inputs.length);

    const stored = [...(await rowsOf(a)), ...(await rowsOf(b))];
    expect(stored).toHaveLength(inputs.length);
    for (const result of created) {
      expect(stored.find((row) => row.id === result?.event.id)).toMatchObject({
        payload: result?.event.payload,
        destination: result?.event.destination,
        status: "Pending",
      });
    }
    // Written together: one statement, one commit.
    expect(new Set(stored.map((row) => row.xmin)).size).toBe(1);
    expect(await usage(a, "2030-01-01")).toBe(6);
    expect(await usage(a, "2030-02-01")).toBe(3);
    expect(await usage(b, "2030-01-01")).toBe(5);
  });

  it("lets exactly the remaining units through when a batch asks for more than is left", async () => {
    const creator = createEventCreator(context.db, LIMIT);
    const org = await createTestOrganization(context);
    const seeded = await together(
      creator,
      Array.from({ length: LIMIT - 3 }, (_, n) => input(org, JANUARY, n)),
    );
    expect(seeded.every((result) => result.status === "fulfilled")).toBe(true);

    // Eight for the last three January units, beside two for an empty February.
    const racing = await together(creator, [
      ...Array.from({ length: 8 }, (_, n) => input(org, JANUARY, 100 + n)),
      input(org, FEBRUARY, 200),
      input(org, FEBRUARY, 201),
    ]);
    const january = racing.slice(0, 8);
    expect(january.filter((result) => result.status === "fulfilled")).toHaveLength(3);
    for (const result of january.filter((r) => r.status === "rejected")) {
      expect(result.reason).toBeInstanceOf(AppError);
      expect((result.reason as AppError).message).toBe(
        `Monthly limit of ${LIMIT} scheduled events reached for this organization`,
      );
    }
    expect(racing.slice(8).every((result) => result.status === "fulfilled")).toBe(true);
    expect(await usage(org, "2030-01-01")).toBe(LIMIT);
    expect(await usage(org, "2030-02-01")).toBe(2);
    const stored = await rowsOf(org);
    expect(stored).toHaveLength(LIMIT + 2);
    // The seeded events and the February pair went in as batches; the last January units one by one.
    expect(new Set(stored.map((row) => row.xmin)).size).toBe(1 + 1 + 3);
  });

  it("fails only the create that cannot be written, and writes the others", async () => {
    const creator = createEventCreator(context.db, LIMIT);
    const org = await createTestOrganization(context);
    const missing = { ...org, orgId: "org_missing" };
    const results = await together(creator, [
      input(org, JANUARY, 1),
      input(missing, JANUARY, 2),
      input(org, JANUARY, 3),
    ]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await rowsOf(org)).toHaveLength(2);
    expect(await usage(org, "2030-01-01")).toBe(2);
    expect(await usage(missing, "2030-01-01")).toBe(0);
  });

  it("fails every create of a batch that cannot reach Postgres", async () => {
    const unreachable = createDb("postgresql://postgres@127.0.0.1:1/nothing");
    try {
      const org = await createTestOrganization(context);
      const results = await together(
        createEventCreator(unreachable, LIMIT),
        [1, 2, 3].map((n) => input(org, JANUARY, n)),
      );
      expect(results.map((result) => result.status)).toEqual(["rejected", "rejected", "rejected"]);
    } finally {
      await unreachable.$disconnect();
    }
  });

  it("answers creates with an idempotency key one by one, beside a batch", async () => {
    const creator = createEventCreator(context.db, LIMIT);
    const org = await createTestOrganization(context);
    const keyed = { ...input(org, JANUARY, 1), idempotencyKey: "order-1" };
    const results = await together(creator, [keyed, keyed, input(org, JANUARY, 2), input(org, JANUARY, 3)]);
    const values = results.map((result) => (result.status === "fulfilled" ? result.value : undefined));
    expect(values.every((value) => value !== undefined)).toBe(true);
    expect(values[0]?.event.id).toBe(values[1]?.event.id);
    expect([values[0]?.created, values[1]?.created].sort()).toEqual([false, true]);
    expect(await rowsOf(org)).toHaveLength(3);
    expect(await usage(org, "2030-01-01")).toBe(3);
  });
});
