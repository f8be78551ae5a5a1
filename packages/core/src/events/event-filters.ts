import { Prisma } from "@punctual/db";
import type { EventStatus } from "../statuses.ts";
import { labelsColumn, requiredLabels } from "./labels.ts";

// The filters of GET /api/events, which POST /api/events/cancel shares (contract §3, §10.5), as the
// conditions of one WHERE. Each is served by an index that leads with org_id, which the caller's
// condition names: (org_id, status, scheduled_time), (org_id, sent_at, …), (org_id, failed_at),
// (org_id, flow_key, scheduled_time, id), and for labels the GIN index on labels (jsonb_path_ops),
// combined with the organization's condition (migration 20261201100000_event_labels). GET /api/events
// pages through a label's rows of event_labels instead (listVisibleEvents), and keeps the containment
// below as the check of every label asked for.

export interface EventFilter {
  statuses?: readonly EventStatus[] | undefined;
  scheduledStartDate?: Date | undefined;
  scheduledEndDate?: Date | undefined;
  sentAtStartDate?: Date | undefined;
  sentAtEndDate?: Date | undefined;
  failedAtStartDate?: Date | undefined;
  failedAtEndDate?: Date | undefined;
  /** Only events of this flow. */
  flowKey?: string | undefined;
  /** `key:value` pairs an event must all carry. */
  labels?: readonly (readonly [string, string])[] | undefined;
}

/** The filter's conditions (none for an empty filter); start bounds inclusive, end bounds exclusive. */
export function eventFilterConditions(filter: EventFilter): Prisma.Sql[] {
  const conditions: Prisma.Sql[] = [];
  if (filter.statuses) conditions.push(Prisma.sql`status = ANY(${[...filter.statuses]}::text[])`);
  if (filter.scheduledStartDate) conditions.push(Prisma.sql`scheduled_time >= ${filter.scheduledStartDate}`);
  if (filter.scheduledEndDate) conditions.push(Prisma.sql`scheduled_time < ${filter.scheduledEndDate}`);
  if (filter.sentAtStartDate) conditions.push(Prisma.sql`sent_at >= ${filter.sentAtStartDate}`);
  if (filter.sentAtEndDate) conditions.push(Prisma.sql`sent_at < ${filter.sentAtEndDate}`);
  if (filter.failedAtStartDate) conditions.push(Prisma.sql`failed_at >= ${filter.failedAtStartDate}`);
  if (filter.failedAtEndDate) conditions.push(Prisma.sql`failed_at < ${filter.failedAtEndDate}`);
  if (filter.flowKey !== undefined) conditions.push(Prisma.sql`flow_key = ${filter.flowKey}`);
  if (filter.labels !== undefined && filter.labels.length > 0) {
    const required = requiredLabels(filter.labels);
    // One containment for all of them: a single probe of the GIN index.
    conditions.push(required ? Prisma.sql`labels @> ${labelsColumn(required)}::jsonb` : Prisma.sql`false`);
  }
  return conditions;
}

/** Whether the filter selects anything narrower than every event of the organization. */
export const filtersSomething = (filter: EventFilter) => eventFilterConditions(filter).length > 0;
