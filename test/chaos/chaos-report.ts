import type { Receiver } from "../support/receiver.ts";

export interface DeliveryCounts {
  events: number;
  sent: number;
  delivered: number;
  duplicated: number;
  lost: number;
  latenessP50Ms: number;
  latenessP99Ms: number;
  latenessMaxMs: number;
}

function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] as number;
}

/**
 * Counts, per event, the deliveries a receiver got (by webhook-id): duplicated = extra deliveries,
 * lost = events never delivered. Lateness is first arrival − scheduled time.
 */
export function countDeliveries(
  scenario: string,
  receiver: Receiver,
  events: { id: string; scheduledTime: Date }[],
  sent: number,
): DeliveryCounts {
  const lateness: number[] = [];
  let duplicated = 0;
  let lost = 0;
  let delivered = 0;
  for (const event of events) {
    const arrivals = receiver.deliveriesOf(event.id).map((delivery) => delivery.at);
    if (arrivals.length === 0) lost++;
    else {
      delivered++;
      duplicated += arrivals.length - 1;
      lateness.push(Math.min(...arrivals) - event.scheduledTime.getTime());
    }
  }
  lateness.sort((a, b) => a - b);
  const counts = {
    events: events.length,
    sent,
    delivered,
    duplicated,
    lost,
    latenessP50Ms: percentile(lateness, 0.5),
    latenessP99Ms: percentile(lateness, 0.99),
    latenessMaxMs: lateness.at(-1) ?? Number.NaN,
  };
  console.info(`[chaos] ${scenario}: ${JSON.stringify(counts)}`);
  return counts;
}
