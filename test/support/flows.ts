import { createEvent, type DeliveryPolicy, type EventQueue, type EventRecord } from "@punctual/core";
import type { TestContext } from "./context.ts";
import { type Receiver, startReceiver } from "./receiver.ts";

// Flows in worker tests: the flow's row written as the API writes it (services/api covers the API),
// events stored in a flow, and a receiver that counts the requests it holds open.

/** Creates or replaces a flow's limits and pause, as PUT /api/flows/:flowKey and pause/resume store them. */
export async function setFlow(
  context: TestContext,
  orgId: string,
  flowKey: string,
  limits: { rate?: number | null; periodMs?: number; parallelism?: number | null; paused?: boolean },
): Promise<void> {
  const rate = limits.rate ?? null;
  const periodMs = limits.periodMs ?? 1_000;
  const parallelism = limits.parallelism ?? null;
  const paused = limits.paused ?? false;
  await context.db.$executeRaw`
    INSERT INTO flows (org_id, flow_key, rate, period_ms, parallelism, paused)
    VALUES (${orgId}, ${flowKey}, ${rate}, ${periodMs}, ${parallelism}, ${paused})
    ON CONFLICT (org_id, flow_key) DO UPDATE SET rate = EXCLUDED.rate, period_ms = EXCLUDED.period_ms,
      parallelism = EXCLUDED.parallelism, paused = EXCLUDED.paused, updated_at = now()`;
}

/** Pauses or resumes a flow, as POST /api/flows/:flowKey/pause and /resume do. */
export async function setPaused(context: TestContext, orgId: string, flowKey: string, paused: boolean): Promise<void> {
  await context.db.$executeRaw`
    UPDATE flows SET paused = ${paused}, updated_at = now() WHERE org_id = ${orgId} AND flow_key = ${flowKey}`;
}

/** `count` events due at `scheduledTime` in flow `flowKey` (null: none), with `policy` stored, queued. */
export async function scheduleInFlow(
  context: TestContext,
  eventQueue: EventQueue,
  input: {
    orgId: string;
    destination: string;
    scheduledTime: Date;
    flowKey: string | null;
    count?: number;
    policy?: DeliveryPolicy;
  },
): Promise<EventRecord[]> {
  const events: EventRecord[] = [];
  for (let n = 0; n < (input.count ?? 1); n++) {
    const { event } = await createEvent(
      context.db,
      {
        orgId: input.orgId,
        destination: input.destination,
        payload: JSON.stringify({ n }),
        scheduledTime: input.scheduledTime,
      },
      new Date(),
      context.config.MAX_EVENTS_PER_MONTH,
    );
    await context.db.$executeRaw`
      UPDATE events SET flow_key = ${input.flowKey},
        delivery_policy = ${input.policy ? JSON.stringify(input.policy) : null}::jsonb
      WHERE id = ${event.id}`;
    events.push(event);
  }
  for (const event of events) await eventQueue.schedule(event);
  return events;
}

/** A receiver that answers after `answerMs` (status from `status`) and counts the requests it holds open. */
export async function startOpenCountingReceiver(
  answerMs: number,
  status: () => number = () => 200,
): Promise<Receiver & { open: () => number; maxOpen: () => number }> {
  let open = 0;
  let maxOpen = 0;
  const receiver = await startReceiver({
    status: () => status(),
    mount: (app) =>
      app.use((_req, res, next) => {
        open += 1;
        maxOpen = Math.max(maxOpen, open);
        res.on("close", () => {
          open -= 1;
        });
        setTimeout(next, answerMs);
      }),
  });
  return Object.assign(receiver, { open: () => open, maxOpen: () => maxOpen });
}

/** The arrivals (ms since the epoch) of the deliveries of `events` at `receiver`, in order. */
export function arrivalsOf(receiver: Receiver, events: EventRecord[]): number[] {
  const ids = new Set(events.map((event) => event.id));
  return receiver.deliveries
    .filter((delivery) => ids.has(String(delivery.headers["webhook-id"])))
    .map((delivery) => delivery.at)
    .sort((a, b) => a - b);
}
