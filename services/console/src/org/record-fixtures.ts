// Records as the API answers them, for the console's tests: each test names only what it is about.
import type { CronJob, DeliveryEvent, EffectiveDeliveryPolicy } from "../api/types.ts";

/** The effective delivery policy of a record that set none (one retry, to keep the texts short). */
export const PLAIN_POLICY: EffectiveDeliveryPolicy = {
  method: "POST",
  headers: {},
  body: "envelope",
  timeoutMs: 10_000,
  retry: { delaysMs: [1_000], maxAgeMs: null, stopOnStatus: [] },
};

/** A Pending event with no policy, flow, labels or callback of its own, changed by `change`. */
export const eventRecord = (change: Partial<DeliveryEvent> = {}): DeliveryEvent => ({
  id: "evt_1",
  scheduledTime: "2027-03-01T09:00:00.000Z",
  destination: "https://example.com/hook",
  org: "org_1",
  status: "Pending",
  payload: "{}",
  createdAt: "2027-02-01T09:00:00.000Z",
  updatedAt: "2027-02-01T09:00:00.000Z",
  replayOf: null,
  flowKey: null,
  callbackUrl: null,
  labels: {},
  ...PLAIN_POLICY,
  ...change,
});

/** An Active cron job every five minutes in UTC with the default timing, changed by `change`. */
export const cronJobRecord = (change: Partial<CronJob> = {}): CronJob => ({
  id: "cron_1",
  createdAt: "2027-02-01T09:00:00.000Z",
  updatedAt: "2027-02-01T09:00:00.000Z",
  status: "Active",
  nextExecutionStatus: "Pending",
  expression: "*/5 * * * *",
  nextExecutionDate: "2027-03-01T12:05:00.000Z",
  destination: "https://example.com/hook",
  org: "org_1",
  payload: "{}",
  timezone: "UTC",
  every: null,
  startAt: null,
  endAt: null,
  maxRuns: null,
  catchUp: "skip",
  catchUpWindowMs: 3_600_000,
  overlap: "allow",
  jitterMs: 0,
  flowKey: null,
  labels: {},
  callbackUrl: null,
  ...PLAIN_POLICY,
  ...change,
});
