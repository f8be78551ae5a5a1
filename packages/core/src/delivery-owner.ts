/**
 * Who delivers a Queued event or cron run, as the statement that found it Queued read it: the
 * condition of taking the delivery over (the worker's side is services/worker/src/delivery/owners.ts).
 */
export interface DeliveryOwner {
  /** The heartbeat id of the worker delivering it; null when nobody holds it (an older claim, a cron run waiting for its retry). */
  workerId: string | null;
  /** When it became that worker's (or nobody's): the row's `updated_at` while it is Queued. */
  since: Date;
}
