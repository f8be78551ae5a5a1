import type { AdmissionStore, HeldSummary, Logger } from "@punctual/core";

// What this worker holds back in the gate's lines (gate-lines.ts), published every HELD_PUBLISH_MS
// for the API's flow and destination records (contract §10.2, §10.3): per organization, how many
// deliveries wait for each flow and each origin, and the oldest one's due time. The API sums the
// workers' summaries; each expires with its worker (HELD_SUMMARY_TTL_MS, admission-store.ts), and an
// organization that holds nothing back any more gets an empty one, which removes it.

/** How often a worker publishes what it holds back. */
export const HELD_PUBLISH_MS = 1_000;

/** What the summaries are made from: a line of the gate and its waiting attempts. */
export interface HeldLine {
  orgId: string;
  flowKey: string | null;
  origin: string;
  waiting: readonly { held: boolean; ticket: { dueAt: number } }[];
}

export interface HeldByOrg {
  flows: Map<string, HeldSummary>;
  origins: Map<string, HeldSummary>;
}

/** The held attempts of the lines (not those still waiting for their first answer), by organization. */
export function heldSummaries(lines: Iterable<HeldLine>): Map<string, HeldByOrg> {
  const byOrg = new Map<string, HeldByOrg>();
  const add = (into: Map<string, HeldSummary>, key: string, dueAt: number) => {
    const summary = into.get(key);
    if (!summary) into.set(key, { waiting: 1, oldestWaitingSince: dueAt });
    else {
      summary.waiting += 1;
      summary.oldestWaitingSince = Math.min(summary.oldestWaitingSince ?? dueAt, dueAt);
    }
  };
  for (const line of lines) {
    for (const waiter of line.waiting) {
      if (!waiter.held) continue;
      let summary = byOrg.get(line.orgId);
      if (!summary) {
        summary = { flows: new Map(), origins: new Map() };
        byOrg.set(line.orgId, summary);
      }
      if (line.flowKey !== null) add(summary.flows, line.flowKey, waiter.ticket.dueAt);
      add(summary.origins, line.origin, waiter.ticket.dueAt);
    }
  }
  return byOrg;
}

export interface HeldPublisher {
  /** Stops publishing, after one last summary (empty ones for what is no longer held). */
  close(): void;
}

/** Publishes every HELD_PUBLISH_MS from now on. */
export function startHeldPublisher(deps: {
  store: AdmissionStore;
  workerId: string;
  logger: Logger;
  lines(): Iterable<HeldLine>;
}): HeldPublisher {
  const { store, workerId, logger } = deps;
  /** Organizations with a summary published, to empty it once they hold nothing back. */
  const published = new Set<string>();

  function publish() {
    const byOrg = heldSummaries(deps.lines());
    const empty: HeldByOrg = { flows: new Map(), origins: new Map() };
    for (const orgId of published) if (!byOrg.has(orgId)) byOrg.set(orgId, empty);
    for (const [orgId, summary] of byOrg) {
      if (summary === empty) published.delete(orgId);
      else published.add(orgId);
      store
        .publishHeld(orgId, workerId, summary)
        .catch((error: unknown) => logger.debug({ err: error, orgId }, "could not publish held deliveries"));
    }
  }

  const timer = setInterval(publish, HELD_PUBLISH_MS);
  timer.unref();
  return {
    close() {
      clearInterval(timer);
      publish();
    },
  };
}
