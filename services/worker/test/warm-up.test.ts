import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Config, createEvent } from "@punctual/core";
import { createDb } from "@punctual/db";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createSender, type Sender } from "../src/delivery/sender.ts";
import { type WarmUpDeps, warmUp } from "../src/delivery/warm-up.ts";
import { createWorker } from "../src/worker.ts";

// The warm-up a worker runs before its first job (WORKER_WARMUP_REQUESTS): requests to a receiver
// of its own on loopback, and the burst's statements for ids that name no event.

type LogLine = Record<string, unknown> & { msg: string; level: number };

let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  // Private destinations refused, as in production: the warm-up's own receiver is still reached.
  context = await createTestContext({ ALLOW_PRIVATE_DESTINATIONS: "false" });
  org = await createTestOrganization(context);
});

afterAll(async () => {
  await context.close();
});

/** Runs the warm-up through a sender of its own, as a worker's, closed afterwards. */
async function warmUpWith(
  deps: Omit<WarmUpDeps, "sender"> & { config: Config },
  sender: Sender = createSender(deps.config, deps.logger),
) {
  try {
    return await warmUp({ ...deps, sender });
  } finally {
    sender.dispatcher.close();
    await sender.transport.close();
  }
}

/** A logger writing to memory, and its lines. */
function memoryLogger() {
  const written: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void written.push(line) });
  return { logger, lines: () => written.map((line) => JSON.parse(line) as LogLine) };
}

describe("worker warm-up", () => {
  it("sends the configured requests to its own loopback receiver, every one answered, with private destinations refused", async () => {
    const { logger, lines } = memoryLogger();
    const result = await warmUpWith({
      db: context.db,
      config: { ...context.config, WORKER_WARMUP_REQUESTS: 1_200 },
      logger,
    });
    expect(result).toMatchObject({ requests: 1_200, answered: 1_200 });
    expect(result.durationMs).toBeGreaterThan(0);
    expect(lines().filter((line) => line.level >= 40)).toEqual([]);
  });

  it("lets its own receiver past the private-address rule only while it runs: the worker's transport refuses loopback after it", async () => {
    const logger = pino({ level: "silent" });
    const sender = createSender(context.config, logger);
    try {
      const result = await warmUp({
        db: context.db,
        config: { ...context.config, WORKER_WARMUP_REQUESTS: 100 },
        logger,
        sender,
      });
      expect(result).toMatchObject({ requests: 100, answered: 100 });
      const receiver = createServer((_req, res) => res.end("ok"));
      await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
      try {
        const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
        const outcome = await sender.transport.send({ url, body: "{}", headers: {} });
        expect(outcome).toMatchObject({ ok: false, kind: "refused", responseStatus: null });
        expect(outcome.error).toBe("Destination address is not allowed");
      } finally {
        receiver.closeAllConnections();
        await new Promise((resolve) => receiver.close(resolve));
      }
    } finally {
      sender.dispatcher.close();
      await sender.transport.close();
    }
  });

  it("changes no event and records no attempt", async () => {
    const due = new Date(Date.now() - 60_000);
    const { event } = await createEvent(
      context.db,
      { orgId: org.orgId, destination: "https://example.com/hook", scheduledTime: due, payload: "{}" },
      new Date(),
      context.config.MAX_EVENTS_PER_MONTH,
    );
    const before = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
    await warmUpWith({
      db: context.db,
      config: { ...context.config, WORKER_WARMUP_REQUESTS: 100 },
      logger: pino({ level: "silent" }),
    });
    const after = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
    expect(after.status).toBe("Pending");
    expect(after.updatedAt).toEqual(before.updatedAt);
    expect(await context.db.eventAttempt.count()).toBe(0);
    expect(await context.db.event.count()).toBe(1);
  });

  it("does nothing when WORKER_WARMUP_REQUESTS is 0", async () => {
    const result = await warmUpWith({
      db: context.db,
      config: { ...context.config, WORKER_WARMUP_REQUESTS: 0 },
      logger: pino({ level: "silent" }),
    });
    expect(result).toEqual({ requests: 0, answered: 0, durationMs: 0 });
  });

  it("warns and still finishes when the database cannot be reached", async () => {
    const unreachable = createDb("postgresql://postgres@127.0.0.1:1/none", { poolSize: 2 });
    const { logger, lines } = memoryLogger();
    try {
      const result = await warmUpWith({
        db: unreachable,
        config: { ...context.config, WORKER_WARMUP_REQUESTS: 300 },
        logger,
      });
      expect(result).toMatchObject({ requests: 300, answered: 300 });
      const warnings = lines().filter((line) => line.level === 40);
      expect(warnings.map((line) => line.msg)).toEqual(["part of the warm-up failed; starting anyway"]);
    } finally {
      await unreachable.$disconnect();
    }
  });

  it("runs before the worker takes jobs, and the start line says what it did", async () => {
    const { logger, lines } = memoryLogger();
    const worker = createWorker({
      ...createTestApiDeps(context).deps,
      config: { ...context.config, WORKER_HEALTH_PORT: 0, WORKER_WARMUP_REQUESTS: 400 },
      logger,
    });
    await worker.start();
    try {
      const started = lines().find((line) => line.msg.startsWith("worker started"));
      const warm = started?.warmUp as { requests: number; answered: number; ms: number } | undefined;
      expect(warm).toMatchObject({ requests: 400, answered: 400 });
      expect(warm?.ms).toBeGreaterThan(0);
    } finally {
      await worker.stop();
    }
  });
});
