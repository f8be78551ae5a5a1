import { systemClock } from "@punctual/core";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createWorkerMetrics } from "../metrics/worker-metrics.ts";
import { createAttemptSettler, type SettledDelivery } from "./attempt-settler.ts";
import type { AttemptOutcome } from "./transport.ts";

// When the `info` line of a final outcome is written: at once when no attempt waits for a send
// slot, otherwise once the sends are quiet (after a burst has gone out and come back), and never
// more than 2 s later.

/** A send scheduler's waiting count, and the moment its sends are quiet, under the test's control. */
function controlledScheduler(waiting: number) {
  let release: () => void = () => {};
  const scheduler = {
    waiting,
    whenQuiet: () =>
      new Promise<void>((resolve) => {
        release = () => {
          scheduler.waiting = 0;
          resolve();
        };
      }),
  };
  return { scheduler, releaseAll: () => release() };
}

function settlerWith(scheduler: { waiting: number; whenQuiet(): Promise<void> }) {
  const messages: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void messages.push(JSON.parse(line).msg) });
  const metrics = createWorkerMetrics({
    preparedJobs: () => 0,
    attemptsWaiting: () => 0,
    attemptsInFlight: () => 0,
    cappedOrigins: () => 0,
  });
  const settler = createAttemptSettler({
    noun: "event",
    clock: systemClock,
    config: { RETRY_DELAYS_MS: [1_000] },
    logger,
    metrics: metrics.event,
    scheduler,
  });
  return { settler, messages };
}

const delivery = (): SettledDelivery => ({
  ids: { eventId: "evt_1" },
  orgId: "org_1",
  dueAt: new Date(),
  firstAttemptAt: undefined,
});
const answered: AttemptOutcome = {
  ok: true,
  startedAt: new Date(),
  responseStatus: 200,
  responseBody: "ok",
  durationMs: 3,
  error: null,
  kind: "answered",
};
const sent = async () => ({ attempt: 1, final: "Sent" as const });

afterEach(() => {
  vi.useRealTimers();
});

describe("outcome lines of the attempt settler", () => {
  it("writes the line at once when no attempt waits for a send slot", async () => {
    const { settler, messages } = settlerWith(controlledScheduler(0).scheduler);
    await settler.settle(delivery(), answered, sent);
    expect(messages).toEqual(["event sent"]);
  });

  it("holds the lines while attempts wait, and writes them all once the sends are quiet", async () => {
    const { scheduler, releaseAll } = controlledScheduler(500);
    const { settler, messages } = settlerWith(scheduler);
    await settler.settle(delivery(), answered, sent);
    await settler.settle(delivery(), { ...answered, ok: false, responseStatus: 500 }, async () => ({
      attempt: 2,
      final: "Failed To Send",
    }));
    expect(messages).toEqual([]);
    releaseAll();
    await expect.poll(() => messages).toEqual(["event sent", "event failed to send"]);
  });

  it("writes held lines after 2 s when attempts never stop waiting", async () => {
    vi.useFakeTimers();
    const { settler, messages } = settlerWith(controlledScheduler(500).scheduler);
    await settler.settle(delivery(), answered, sent);
    await vi.advanceTimersByTimeAsync(1_900);
    expect(messages).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(messages).toEqual(["event sent"]);
  });
});
