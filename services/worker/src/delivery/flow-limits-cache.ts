import { type FlowLimits, flowLimitsKey, type Logger, NO_FLOW_LIMITS } from "@punctual/core";

// Flows' limits and pause as this worker last read them from Postgres (the `flows` rows the API
// writes, packages/core/src/flows/flow-records.ts), for the gate's lines (gate-lines.ts). They are
// used for FLOW_LIMITS_FRESH_MS, then read again before a line asks Redis: a pause or a resume takes
// effect within that. The lines that need a read in one turn of the event loop share one read.

/** How long a flow's limits read from Postgres are used before they are read again (a pause takes effect within this). */
export const FLOW_LIMITS_FRESH_MS = 250;

/** What waits for a flow's limits: a line of the gate. */
interface Reader {
  orgId: string;
  flowKey: string | null;
}

export interface FlowLimitsCacheDeps<R extends Reader> {
  /** Reads flows' limits (readFlowLimits against Postgres). */
  readLimits(flows: { orgId: string; flowKey: string }[]): Promise<Map<string, FlowLimits>>;
  logger: Logger;
  /** The reader's flow's limits are known now: it asks again. */
  known(reader: R): void;
  /** The reader's flow was never read and could not be read now: it waits, and asks again later. */
  unknown(reader: R): void;
}

export interface FlowLimitsCache<R extends Reader> {
  /** The flow's limits when read less than FLOW_LIMITS_FRESH_MS ago; undefined: `read` them first. */
  fresh(orgId: string, flowKey: string): FlowLimits | undefined;
  /** Reads the reader's flow's limits, with the others asked for in this turn; then `known` or `unknown`. */
  read(reader: R): void;
}

export function createFlowLimitsCache<R extends Reader>(deps: FlowLimitsCacheDeps<R>): FlowLimitsCache<R> {
  const { logger } = deps;
  /** Flows' limits as last read, by flowLimitsKey. */
  const limits = new Map<string, { limits: FlowLimits; at: number }>();
  /** Readers waiting for their flow's limits to be read, and the read under way. */
  let toRead: R[] = [];
  let reading = false;

  function read(reader: R) {
    if (!toRead.includes(reader)) toRead.push(reader);
    if (reading) return;
    reading = true;
    queueMicrotask(() => {
      const batch = toRead;
      toRead = [];
      const wanted = new Map<string, { orgId: string; flowKey: string }>();
      for (const { orgId, flowKey } of batch) {
        if (flowKey !== null) wanted.set(flowLimitsKey(orgId, flowKey), { orgId, flowKey });
      }
      deps.readLimits([...wanted.values()]).then(
        (found) => {
          reading = false;
          const now = Date.now();
          for (const [key] of wanted) limits.set(key, { limits: found.get(key) ?? NO_FLOW_LIMITS, at: now });
          for (const each of batch) deps.known(each);
          if (toRead.length > 0) read(toRead[0] as R);
        },
        (error: unknown) => {
          reading = false;
          logger.warn({ err: error }, "could not read flows' limits; their deliveries wait");
          // Known limits, even old ones, still hold; a flow never read waits until they can be read.
          const now = Date.now();
          for (const [key, known] of limits) if (wanted.has(key)) limits.set(key, { ...known, at: now });
          for (const each of batch) {
            if (each.flowKey !== null && limits.has(flowLimitsKey(each.orgId, each.flowKey))) deps.known(each);
            else deps.unknown(each);
          }
          // The readers that came during this read get theirs: a failure ends one read, not the waits of others.
          if (toRead.length > 0) read(toRead[0] as R);
        },
      );
    });
  }

  return {
    fresh(orgId, flowKey) {
      const known = limits.get(flowLimitsKey(orgId, flowKey));
      return known && Date.now() - known.at < FLOW_LIMITS_FRESH_MS ? known.limits : undefined;
    },
    read,
  };
}
