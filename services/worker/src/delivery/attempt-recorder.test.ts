import { systemClock } from "@punctual/core";
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createWorkerMetrics } from "../metrics/worker-metrics.ts";
import { createAttemptRecorder, type RecordedDelivery } from "./attempt-recorder.ts";
import { BOOKKEEPING_MAX_WAIT_MS, type Bookkeeping, createBookkeeping } from "./bookkeeping.ts";
import type { AttemptOutcome } from "./transport.ts";

// When the `info` line of a final outcome is written: at once when no attempt waits for a send
// slot, otherwise once the sends are quiet (after a burst has gone out and come back), and never
// more than BOOKKEEPING_MAX_WAIT_MS later (bookkeeping.ts, here with its real rule).

/** Sends under the test's control: attempts waiting, and the moment they are idle. */
function controlledSends(waiting: number) {
  let release: () => void = () => {};
  const idle = new Promise<void>((resolve) => {
    release = resolve;
  });
  const activity = {
    waiting,
    whenIdle: () => (activity.waiting === 0 ? Promise.resolve() : idle),
    nextInstant: () => undefined,
  };
  const bookkeeping = createBookkeeping(activity);
  return {
    bookkeeping,
    releaseAll: () => {
      activity.waiting = 0;
      release();
    },
  };
}

function recorderWith(bookkeeping: Bookkeeping) {
  const messages: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void messages.push(JSON.parse(line).msg) });
  const metrics = createWorkerMetrics({
    preparedJobs: () => 0,
    attemptsWaiting: () => 0,
    attemptsInFlight: () => 0,
    cappedOrigins: () => 0,
    heldDeliveries: () => 0,
  });
  const recorder = createAttemptRecorder({
    noun: "event",
    clock: systemClock,
    config: { RETRY_AFTER_MAX_MS: 3_600_000 },
    logger,
    metrics: metrics.event,
    bookkeeping,
  });
  return { recorder, messages };
}

const delivery = (): RecordedDelivery => ({
  ids: { eventId: "evt_1" },
  orgId: "org_1",
  dueAt: new Date(),
  firstAttemptAt: undefined,
  retry: { delaysMs: [1_000], maxAgeMs: null, stopOnStatus: [] },
  attemptsMade: 0,
});
const answered: AttemptOutcome = {
  ok: true,
  startedAt: new Date(),
  responseStatus: 200,
  responseBody: "ok",
  durationMs: 3,
  error: null,
  retryAfter: null,
  kind: "answered",
};
const sent = async () => ({ attempt: 1, final: "Sent" as const });

afterEach(() => {
  vi.useRealTimers();
});

describe("outcome lines of the attempt recorder", () => {
  it("writes the line at once when no attempt waits for a send slot", async () => {
    const { recorder, messages } = recorderWith(controlledSends(0).bookkeeping);
    await recorder.record(delivery(), answered, sent);
    expect(messages).toEqual(["event sent"]);
  });

  it("holds the lines while attempts wait, and writes them all once the sends are quiet", async () => {
    const { bookkeeping, releaseAll } = controlledSends(500);
    const { recorder, messages } = recorderWith(bookkeeping);
    await recorder.record(delivery(), answered, sent);
    await recorder.record(delivery(), { ...answered, ok: false, responseStatus: 500 }, async () => ({
      attempt: 2,
      final: "Failed To Send",
    }));
    expect(messages).toEqual([]);
    releaseAll();
    await expect.poll(() => messages).toEqual(["event sent", "event failed to send"]);
  });

  it("writes held lines BOOKKEEPING_MAX_WAIT_MS later when attempts never stop waiting", async () => {
    vi.useFakeTimers();
    const { recorder, messages } = recorderWith(controlledSends(500).bookkeeping);
    await recorder.record(delivery(), answered, sent);
    await vi.advanceTimersByTimeAsync(BOOKKEEPING_MAX_WAIT_MS - 100);
    expect(messages).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(messages).toEqual(["event sent"]);
  });
});
