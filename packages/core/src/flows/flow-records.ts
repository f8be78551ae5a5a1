import { type Db, Prisma, queryRows } from "@punctual/db";
import type { FlowLimits } from "./admission-store.ts";

// Flows' limits and pauses in Postgres (contract §10.2): the API writes them, the workers read them
// (with a short cache: flow-gate's FLOW_LIMITS_FRESH_MS) and enforce them in Redis (admission-store.ts).

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
