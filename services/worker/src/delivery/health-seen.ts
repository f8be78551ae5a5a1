import type { HealthState } from "@punctual/core";

// Origins' health as this worker last saw it (flow-gate.ts): from the breaker's answers to its
// reports (gate-reports.ts), from a grant that was not a probe (Healthy) and from a hold by an
// Unhealthy origin (gate-lines.ts). Seen Healthy within HEALTH_FRESH_MS, an attempt without a flow
// passes the gate without asking Redis: the burst path costs no Redis call.

/** How long an origin seen Healthy (by a report or a grant) lets attempts without a flow pass without asking Redis. */
export const HEALTH_FRESH_MS = 1_000;

/** One key per organization and origin. */
export const originKey = (orgId: string, origin: string) => `${orgId}\n${origin}`;

export interface HealthSeen {
  /** The origin was seen in this state now. */
  saw(orgId: string, origin: string, state: HealthState): void;
  /** Whether the origin was seen Healthy less than HEALTH_FRESH_MS ago. */
  healthyNow(orgId: string, origin: string): boolean;
}

export function createHealthSeen(): HealthSeen {
  const seen = new Map<string, { state: HealthState; at: number }>();
  return {
    saw(orgId, origin, state) {
      seen.set(originKey(orgId, origin), { state, at: Date.now() });
    },
    healthyNow(orgId, origin) {
      const last = seen.get(originKey(orgId, origin));
      return last !== undefined && last.state === "Healthy" && Date.now() - last.at < HEALTH_FRESH_MS;
    },
  };
}
