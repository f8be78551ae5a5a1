import { type Db, type DbTransaction, Prisma, queryRows } from "@punctual/db";
import type { FlowLimits } from "./admission-store.ts";
import { DEFAULT_FLOW_PERIOD_MS, flowLimitReached } from "./flow-rules.ts";

// Flows' limits and pauses in Postgres (contract §10.2): the API writes them, the workers read them
// (with a short cache: FLOW_LIMITS_FRESH_MS, the worker's flow-limits-cache.ts) and enforce them in
// Redis (admission-store.ts).

/** The limits of a flow without a record: none (its deliveries only share the fair scheduler's turns). */
export const NO_FLOW_LIMITS: FlowLimits = { rate: null, periodMs: 1_000, parallelism: null, paused: false };

/** The limits of each of an organization's flows named, by flow key; a flow without a record is absent. */
export async function readFlowLimits(
  db: Db,
  flows: { orgId: string; flowKey: string }[],
): Promise<Map<string, FlowLimits>> {
  const found = new Map<string, FlowLimits>();
  if (flows.length === 0) return found;
  const rows = await queryRows<{
    org_id: string;
    flow_key: string;
    rate: number | null;
    period_ms: number;
    parallelism: number | null;
    paused: boolean;
  }>(
    db,
    Prisma.sql`
    SELECT f.org_id, f.flow_key, f.rate, f.period_ms, f.parallelism, f.paused
    FROM flows f
    JOIN unnest(${flows.map((flow) => flow.orgId)}::text[], ${flows.map((flow) => flow.flowKey)}::text[])
      AS wanted(org_id, flow_key) ON f.org_id = wanted.org_id AND f.flow_key = wanted.flow_key`,
  );
  for (const row of rows) {
    found.set(flowLimitsKey(row.org_id, row.flow_key), {
      rate: row.rate,
      periodMs: row.period_ms,
      parallelism: row.parallelism,
      paused: row.paused,
    });
  }
  return found;
}

/** The key of a flow in readFlowLimits' answer. */
export const flowLimitsKey = (orgId: string, flowKey: string) => `${orgId} ${flowKey}`;

// ---------------------------------------------------------------------------------------------
// The API's reads and writes of flows (services/api/src/flows/flow-routes.ts).

/** A flow's record: its limits (null: no such limit) and whether it is paused. */
export interface FlowRecord {
  orgId: string;
  flowKey: string;
  rate: number | null;
  periodMs: number;
  parallelism: number | null;
  paused: boolean;
  createdAt: Date;
  updatedAt: Date;
}

interface FlowRow {
  org_id: string;
  flow_key: string;
  rate: number | null;
  period_ms: number;
  parallelism: number | null;
  paused: boolean;
  created_at: Date;
  updated_at: Date;
}

const FLOW_COLUMNS = Prisma.sql`org_id, flow_key, rate, period_ms, parallelism, paused, created_at, updated_at`;

const flowFromRow = (row: FlowRow): FlowRecord => ({
  orgId: row.org_id,
  flowKey: row.flow_key,
  rate: row.rate,
  periodMs: row.period_ms,
  parallelism: row.parallelism,
  paused: row.paused,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** The organization's flows, by flow key (at most MAX_FLOWS_PER_ORG of them). */
export async function listFlows(db: Db, orgId: string): Promise<FlowRecord[]> {
  const rows = await queryRows<FlowRow>(
    db,
    Prisma.sql`SELECT ${FLOW_COLUMNS} FROM flows WHERE org_id = ${orgId} ORDER BY flow_key`,
  );
  return rows.map(flowFromRow);
}

/** One flow of the organization, or undefined when it has no record. */
export async function findFlow(db: Db, orgId: string, flowKey: string): Promise<FlowRecord | undefined> {
  const [row] = await queryRows<FlowRow>(
    db,
    Prisma.sql`SELECT ${FLOW_COLUMNS} FROM flows WHERE org_id = ${orgId} AND flow_key = ${flowKey}`,
  );
  return row ? flowFromRow(row) : undefined;
}

/**
 * Writes a flow's row in a transaction where the organization's flow writes take turns (a
 * transaction-scoped advisory lock, as bulk replays take theirs in events/replay.ts): a write that
 * would create a row counts the organization's rows first, so concurrent creates cannot pass
 * `maxFlows` together. The lock is the organization's flows' alone: it holds back no event, cron job
 * or organization write. A refused write changes nothing.
 */
async function writeCounted(
  db: Db,
  orgId: string,
  flowKey: string,
  maxFlows: number,
  write: (tx: DbTransaction) => Promise<FlowRow[]>,
): Promise<FlowRecord> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`punctual:flows:${orgId}`}, 0))::text`;
    // A statement of its own after the lock: its snapshot sees the rows the turn before committed.
    const [state] = await tx.$queryRaw<{ exists: boolean; count: number }[]>`
      SELECT EXISTS (SELECT 1 FROM flows WHERE org_id = ${orgId} AND flow_key = ${flowKey}) AS exists,
        (SELECT count(*)::int FROM flows WHERE org_id = ${orgId}) AS count`;
    if (!state?.exists && (state?.count ?? 0) >= maxFlows) throw flowLimitReached(maxFlows);
    const [row] = await write(tx);
    if (!row) throw new Error(`flow ${flowKey} of ${orgId} was not written`);
    return flowFromRow(row);
  });
}

/** A flow's limits as PUT /api/flows/:flowKey sets them. */
export interface FlowLimitsInput {
  rate: number | null;
  periodMs: number;
  parallelism: number | null;
}

/**
 * Replaces a flow's limits, creating its record (not paused) when it has none; a paused flow stays
 * paused. Refused with 403 when the organization already has `maxFlows` other flows.
 */
export async function setFlowLimits(
  db: Db,
  orgId: string,
  flowKey: string,
  limits: FlowLimitsInput,
  now: Date,
  maxFlows: number,
): Promise<FlowRecord> {
  return writeCounted(
    db,
    orgId,
    flowKey,
    maxFlows,
    (tx) => tx.$queryRaw<FlowRow[]>`
      INSERT INTO flows (org_id, flow_key, rate, period_ms, parallelism, paused, created_at, updated_at)
      VALUES (${orgId}, ${flowKey}, ${limits.rate}, ${limits.periodMs}, ${limits.parallelism}, false, ${now}, ${now})
      ON CONFLICT (org_id, flow_key) DO UPDATE SET
        rate = EXCLUDED.rate, period_ms = EXCLUDED.period_ms, parallelism = EXCLUDED.parallelism,
        updated_at = EXCLUDED.updated_at
      RETURNING ${FLOW_COLUMNS}`,
  );
}

/**
 * Pauses a flow, creating its record (without limits) when it has none: counted against
 * `maxFlows` like any other. Pausing a paused flow changes nothing.
 */
export async function pauseFlow(
  db: Db,
  orgId: string,
  flowKey: string,
  now: Date,
  maxFlows: number,
): Promise<FlowRecord> {
  return writeCounted(
    db,
    orgId,
    flowKey,
    maxFlows,
    (tx) => tx.$queryRaw<FlowRow[]>`
      INSERT INTO flows (org_id, flow_key, rate, period_ms, parallelism, paused, created_at, updated_at)
      VALUES (${orgId}, ${flowKey}, NULL, ${DEFAULT_FLOW_PERIOD_MS}, NULL, true, ${now}, ${now})
      ON CONFLICT (org_id, flow_key) DO UPDATE SET
        paused = true, updated_at = CASE WHEN flows.paused THEN flows.updated_at ELSE EXCLUDED.updated_at END
      RETURNING ${FLOW_COLUMNS}`,
  );
}

/**
 * Resumes a flow; undefined when it has no record (nothing to resume: it was never paused).
 * Resuming a flow that is not paused changes nothing.
 */
export async function resumeFlow(db: Db, orgId: string, flowKey: string, now: Date): Promise<FlowRecord | undefined> {
  const [row] = await queryRows<FlowRow>(
    db,
    Prisma.sql`
    UPDATE flows SET paused = false, updated_at = CASE WHEN paused THEN ${now} ELSE updated_at END
    WHERE org_id = ${orgId} AND flow_key = ${flowKey}
    RETURNING ${FLOW_COLUMNS}`,
  );
  return row ? flowFromRow(row) : undefined;
}

/** Removes a flow's record (its limits and its pause); false when it had none. */
export async function deleteFlow(db: Db, orgId: string, flowKey: string): Promise<boolean> {
  const deleted = await db.flow.deleteMany({ where: { orgId, flowKey } });
  return deleted.count > 0;
}

/** Paused flows over every organization (a metric, read at each scrape). */
export async function countPausedFlows(db: Db): Promise<number> {
  const [row] = await queryRows<{ count: number }>(
    db,
    Prisma.sql`SELECT count(*)::int AS count FROM flows WHERE paused`,
  );
  return row?.count ?? 0;
}
