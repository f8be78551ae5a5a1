import { Writable } from "node:stream";
import { createLogger } from "@punctual/core";
import { Prisma, queryRows } from "@punctual/db";
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

// A failed statement is logged by what failed and where, never with the data it carried: the
// parameters of a query (payloads, destinations, ids) and the rows Postgres quotes back must not
// reach a log line at any level. Each case makes a real statement fail on the real database.

/** Text that stands for data: none of it may appear in a log line. */
const SECRET = "s3cret-payload-7Qx";

let context: TestContext;
let org: TestOrganization;
const lines: string[] = [];

/** A logger as the services make it (redaction and error serializer), writing to `lines`. */
const logger = () =>
  createLogger(
    { LOG_LEVEL: "trace" },
    "test",
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

/** The line logged for `error`, parsed. */
function logged(error: unknown): { text: string; err: Record<string, unknown> } {
  lines.length = 0;
  logger().error({ err: error }, "failed");
  const text = lines.join("");
  return { text, err: JSON.parse(text).err };
}

async function failure(statement: () => Promise<unknown>): Promise<unknown> {
  try {
    await statement();
  } catch (error) {
    return error;
  }
  throw new Error("the statement did not fail");
}

describe("an error in a log line", () => {
  it("keeps Prisma's explanation of a query it refused, without the query or its parameters", async () => {
    // A time JavaScript holds and Prisma cannot send: its message renders the query and every value.
    const error = await failure(
      () => context.db.$queryRaw`SELECT ${SECRET} AS payload, ${new Date(8.64e15)}::timestamptz AS due`,
    );
    const { text, err } = logged(error);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("+275760");
    expect(text).not.toMatch(/SELECT|parameters: \{/);
    expect(err.type).toBe("PrismaClientValidationError");
    expect(err.message).toMatch(/^Invalid `prisma\.\$queryRaw\(\)` invocation: .*Could not convert/);
  });

  it("keeps the SQLSTATE and Postgres' words, without the value it quotes", async () => {
    const error = await failure(() => context.db.$queryRaw`SELECT ${SECRET}::int`);
    const { text, err } = logged(error);
    expect(text).not.toContain(SECRET);
    expect(err).toMatchObject({
      type: "PrismaClientKnownRequestError",
      code: "P2010",
      db: { code: "22P02", message: 'invalid input syntax for type integer: "…"' },
    });
  });

  it("leaves out the failing row Postgres details, keeping the names of the constraint and relation", async () => {
    await context.db.$executeRawUnsafe(
      `ALTER TABLE accounts ADD CONSTRAINT no_secret_email CHECK (email <> '${SECRET}@example.com')`,
    );
    try {
      const error = await failure(
        () => context.db.$executeRaw`INSERT INTO accounts (id, email) VALUES ('acc_x', ${`${SECRET}@example.com`})`,
      );
      const { text, err } = logged(error);
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain("Failing row");
      expect(err.db).toMatchObject({ code: "23514" });
      expect(String((err.db as { message: string }).message)).toContain('constraint "no_secret_email"');
    } finally {
      await context.db.$executeRawUnsafe("ALTER TABLE accounts DROP CONSTRAINT no_secret_email");
    }
  });

  it("logs a node-postgres error by its code and words alone", async () => {
    const error = await failure(() => queryRows(context.db, Prisma.sql`SELECT ${SECRET}::int`));
    const { text, err } = logged(error);
    expect(text).not.toContain(SECRET);
    expect(err).toMatchObject({ type: "DatabaseError", code: "22P02" });
  });

  it("names a Redis command without its keys or values", async () => {
    // `SET key value BADOPTION` is refused: the error carries the command and all its arguments.
    const error = await failure(() =>
      (context.redis.call as (...args: string[]) => Promise<unknown>)("SET", `${SECRET}-key`, SECRET, "BADOPTION"),
    );
    const { text, err } = logged(error);
    expect(text).not.toContain(SECRET);
    expect(err).toMatchObject({ type: "ReplyError", command: "SET" });
  });

  it("is described the same way under the name `error`", async () => {
    const error = await failure(() => context.db.$queryRaw`SELECT ${SECRET}::int`);
    lines.length = 0;
    logger().warn({ error }, "failed");
    const line = JSON.parse(lines.join(""));
    expect(JSON.stringify(line)).not.toContain(SECRET);
    expect(line.error).toMatchObject({ code: "P2010", db: { code: "22P02" } });
  });

  it("keeps a cause's code, and an ordinary error as it is", () => {
    const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
    const { err } = logged(new Error("could not reach the receiver", { cause }));
    expect(err).toMatchObject({
      type: "Error",
      message: "could not reach the receiver",
      cause: { type: "Error", code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:9" },
    });
    expect(String(err.stack)).toMatch(/^Error: could not reach the receiver\n\s+at /);
  });
});

describe("a request the database refuses", () => {
  it("answers 500 with the route's sentence and logs the error without the request's data", async () => {
    const deps = { ...createTestApiDeps(context).deps, logger: logger() };
    const app = createApp(deps);
    // Stands for any statement Postgres refuses with the row in its detail (a check, a trigger).
    await context.db.$executeRawUnsafe(`ALTER TABLE events ADD CONSTRAINT no_secret CHECK (payload <> '${SECRET}')`);
    try {
      lines.length = 0;
      const res = await request(app)
        .post("/api/events")
        .set("x-api-key", org.apiKey)
        .send({
          payload: SECRET,
          destination: `https://example.com/${SECRET}`,
          scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
        });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ message: "Unable to create the event" });
      await expect.poll(() => lines.some((line) => line.includes('"msg":"request failed"'))).toBe(true);
      const text = lines.join("");
      expect(text).toContain('"code":"23514"');
      expect(text).not.toContain(SECRET);
    } finally {
      await context.db.$executeRawUnsafe("ALTER TABLE events DROP CONSTRAINT no_secret");
    }
  });
});
