/** The q-quantile (0…1) of sorted values by nearest rank; NaN when there are none. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

/** What the receiver saw of one batch of deliveries. */
export interface DeliveryStats {
  /** Deliveries expected. */
  n: number;
  /** Lateness (first arrival − due time) of every delivered id, ms, sorted. */
  lateness: number[];
  p50: number;
  p99: number;
  max: number;
  /** Expected ids that never arrived. */
  lost: number;
  /** Arrivals beyond the first of an id (and arrivals of ids that were not expected). */
  duplicated: number;
  /** (arrivals − 1) / (last arrival − first arrival): the rate once deliveries have started. */
  perSecond: number;
}

/** Matches arrivals `[id, ms]` against the due time of every expected id. */
export function deliveryStats(dueById: Map<string, number>, arrivals: [string, number][]): DeliveryStats {
  const first = new Map<string, number>();
  let duplicated = 0;
  for (const [id, at] of arrivals) {
    if (!dueById.has(id) || first.has(id)) duplicated++;
    else first.set(id, at);
  }
  const lateness = [...first].map(([id, at]) => at - (dueById.get(id) ?? at)).sort((a, b) => a - b);
  const times = [...first.values()];
  const span = times.length > 1 ? Math.max(...times) - Math.min(...times) : 0;
  return {
    n: dueById.size,
    lateness,
    p50: quantile(lateness, 0.5),
    p99: quantile(lateness, 0.99),
    max: lateness.at(-1) ?? Number.NaN,
    lost: dueById.size - first.size,
    duplicated,
    perSecond: span > 0 ? ((times.length - 1) * 1000) / span : Number.NaN,
  };
}
