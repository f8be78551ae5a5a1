// The API's records as the console reads them (docs/api.md).

export type EventStatus = "Pending" | "Cancelled" | "Queued" | "Sent" | "Failed To Send" | "Failed To Queue";

export const EVENT_STATUSES: readonly EventStatus[] = [
  "Pending",
  "Queued",
  "Sent",
  "Failed To Send",
  "Failed To Queue",
  "Cancelled",
];

/** The statuses a whole filter of events can be replayed from (POST /api/events/replay). */
export const REPLAYABLE_FAILURES: readonly EventStatus[] = ["Failed To Send", "Failed To Queue"];

export interface Attempt {
  attempt: number;
  at: string;
  responseStatus: number | null;
  durationMs: number | null;
  error: string | null;
}

export interface DeliveryEvent {
  id: string;
  scheduledTime: string;
  destination: string;
  org: string;
  status: EventStatus;
  payload: string;
  createdAt: string;
  updatedAt: string;
  replayOf?: string | null;
  history?: Attempt[];
}

export interface CronRun {
  id: string;
  cron: string;
  scheduledFor: string;
  status: string;
  attempts: number;
  responseStatus: number | null;
  responseData: string | null;
  requestData: string | null;
  error: string | null;
  durationMs: number | null;
  createdAt: string;
  updatedAt: string;
}

export interface CronJob {
  id: string;
  createdAt: string;
  updatedAt: string;
  status: "Active" | "Disabled";
  nextExecutionStatus: string;
  expression: string;
  nextExecutionDate: string | null;
  destination: string;
  org: string;
  payload: string;
  timezone: string;
  history?: CronRun[];
}

export interface CronPreview {
  expression: string;
  timezone: string;
  times: string[];
  neverFires: boolean;
}

export interface StatsBucket {
  start: string;
  sent: number;
  failed: number;
  retried: number;
  latenessMs: { p50: number | null; p99: number | null };
}

export interface Stats {
  from: string;
  to: string;
  bucket: "hour" | "day";
  buckets: StatsBucket[];
  totals: { sent: number; failed: number; retried: number };
  usage: { month: string; used: number; limit: number };
  failingDestinations: { destination: string; failures: number; lastError: string | null }[];
}

export interface TestDeliveryResult {
  responseStatus: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
}

export interface Session {
  kind: "organization" | "operator";
  orgId?: string;
  orgName?: string;
  expiresAt: string;
}

export interface Organization {
  id: string;
  name: string;
  ownerEmail: string;
  members: number;
  activeApiKeys: number;
  createdAt: string;
  previousSecretValidUntil?: string | null;
}

export interface ApiKey {
  id: string;
  orgId: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface CreatedKey {
  keyId: string;
  orgId: string;
  apiKey: string;
  prefix: string;
  revokedKeyId?: string;
}

export interface CreatedOrganization {
  accountId: string;
  orgId: string;
  keyId: string;
  apiKey: string;
  signingSecret: string;
}

export interface RotatedSecret {
  orgId: string;
  signingSecret: string;
  previousSecretValidUntil: string | null;
}

export interface QueueCounts {
  waiting: number;
  delayed: number;
  active: number;
  failed: number;
}

export interface ServiceHealth {
  queues: Record<string, QueueCounts>;
  workers: { id: string; host: string; pid: number; startedAt: string; lastSeenAt: string }[];
  reconciler: { lastRunAt: string | null; durationMs: number | null };
  failureNotices: { lastSentAt: string | null; sentLast24h: number };
  bullBoard: string;
}
