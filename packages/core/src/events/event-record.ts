import { Prisma } from "@punctual/db";
import {
  type DeliveryPolicy,
  type PolicyDefaults,
  type ResolvedDeliveryPolicy,
  resolvePolicy,
} from "../delivery-policy/policy.ts";
import { redactPolicy } from "../delivery-policy/redaction.ts";
import { policyFromColumn } from "../organizations/stored-delivery-policy.ts";
import type { EventStatus } from "../statuses.ts";
import { type Labels, labelsFromColumn } from "./labels.ts";

export const EVENT_NOT_FOUND = "Unable to find event";

/** The columns of `EventRow`, for raw SQL that reads events. */
export const EVENT_COLUMNS = Prisma.sql`id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at, replay_of, delivery_policy, flow_key, callback_url, labels`;

/** An event as stored (raw SQL rows are mapped to this shape). */
export interface EventRecord {
  id: string;
  orgId: string;
  destination: string;
  payload: string;
  scheduledTime: Date;
  status: EventStatus;
  sentAt: Date | null;
  failedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** The event this one sends again (a replay), or null. */
  replayOf: string | null;
  /**
   * The policy stored when it was created (its own fields over its organization's default then),
   * header values as given; null: the deployment's defaults.
   */
  deliveryPolicy: DeliveryPolicy | null;
  /** The flow whose limits and pause its attempts wait for (contract §10.2), or null: none. */
  flowKey: string | null;
  /** Told of the delivery's final outcome (outcomes/notices.ts), or null: none. */
  callbackUrl: string | null;
  /** Its labels (contract §10.5); `{}` for none. */
  labels: Labels;
}

/** The `events` row as raw SQL returns it. */
export interface EventRow {
  id: string;
  org_id: string;
  destination: string;
  payload: string;
  scheduled_time: Date;
  status: string;
  sent_at: Date | null;
  failed_at: Date | null;
  created_at: Date;
  updated_at: Date;
  replay_of: string | null;
  delivery_policy: unknown;
  flow_key: string | null;
  callback_url?: string | null;
  labels: unknown;
}

export function eventFromRow(row: EventRow): EventRecord {
  return {
    id: row.id,
    orgId: row.org_id,
    destination: row.destination,
    payload: row.payload,
    scheduledTime: row.scheduled_time,
    status: row.status as EventStatus,
    sentAt: row.sent_at,
    failedAt: row.failed_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    replayOf: row.replay_of,
    deliveryPolicy: policyFromColumn(row.delivery_policy),
    flowKey: row.flow_key ?? null,
    callbackUrl: row.callback_url ?? null,
    labels: labelsFromColumn(row.labels),
  };
}

/**
 * The effective delivery policy as every answer shows it (contract §10.1): each field filled with
 * the deployment's defaults, sensitive header values "[redacted]".
 */
export function effectivePolicyView(
  stored: DeliveryPolicy | null | undefined,
  defaults: PolicyDefaults,
): ResolvedDeliveryPolicy {
  return redactPolicy(resolvePolicy(stored, defaults));
}

/**
 * The contract's event shape (§3): ISO timestamps; `sentAt`/`failedAt` only when set; `replayOf`
 * `flowKey` and `callbackUrl` always (null when the event is not a replay, in no flow, without a
 * callback), `labels` always (`{}` for none); then the
 * effective delivery policy (§10.1).
 */
interface EventView extends ResolvedDeliveryPolicy {
  id: string;
  scheduledTime: string;
  destination: string;
  org: string;
  status: EventStatus;
  payload: string;
  createdAt: string;
  updatedAt: string;
  sentAt?: string;
  failedAt?: string;
  replayOf: string | null;
  flowKey: string | null;
  callbackUrl: string | null;
  labels: Labels;
}

export function toEventView(event: EventRecord, defaults: PolicyDefaults): EventView {
  return {
    id: event.id,
    scheduledTime: event.scheduledTime.toISOString(),
    destination: event.destination,
    org: event.orgId,
    status: event.status,
    payload: event.payload,
    createdAt: event.createdAt.toISOString(),
    updatedAt: event.updatedAt.toISOString(),
    ...(event.sentAt ? { sentAt: event.sentAt.toISOString() } : {}),
    ...(event.failedAt ? { failedAt: event.failedAt.toISOString() } : {}),
    replayOf: event.replayOf,
    flowKey: event.flowKey,
    callbackUrl: event.callbackUrl,
    labels: event.labels,
    ...effectivePolicyView(event.deliveryPolicy, defaults),
  };
}
