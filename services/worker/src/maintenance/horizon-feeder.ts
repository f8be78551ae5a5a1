import type { Clock, Config, EventQueue, Redis } from "@punctual/core";
import type { Db } from "@punctual/db";

// Pending events due beyond ENQUEUE_HORIZON_MS hold no job in Redis (the event queue skips them), so
// Redis memory follows the near future, not the backlog. The feeder queues them as they come within
// the horizon. It walks the events in (scheduled_time, id) order and keeps in Redis how far it got:
// each run reads only the slice that entered the horizon since the last one, a few thousand rows at
// most even at a hundred million events a day, never the whole horizon again.
//
// What is before the cursor is within the horizon, where the API queues every event it creates or
// moves at once; what is after it is beyond, where the API adds no job. So every Pending event before
// the cursor has been offered to the queue, once by one of them. A job lost afterwards (a flush
// that kept the cursor, a race with a move) is the reconciler's missing-job check's to repair, as
// the event comes within its own shorter horizon, still before its time.

/** The cursor: every Pending event ordered at or before it has been queued. */
export const horizonCursorKey = (prefix: string) => `${prefix}:enqueue-horizon:cursor`;

/**
 * The feeder stays this far behind the horizon: the API on another host, whose clock may be this
 * much behind, can still count an event beyond the cursor as beyond the horizon and not queue it.
 */
export const FEEDER_CLOCK_SLACK_MS = 1_000;
/**
 * Pages of RECONCILE_BATCH_SIZE queued per run: 50,000 events per 5 s run by default, far more than
 * enter the horizon even at a hundred million a day. After a lost cursor (Redis flushed) the whole
 * horizon is walked again over the following runs, nearest events first.
 */
const MAX_PAGES = 50;

interface Cursor {
  time: Date;
  id: string;
}

const START: Cursor = { time: new Date(0), id: "" };

export interface HorizonFeederDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "ENQUEUE_HORIZON_MS" | "RECONCILE_BATCH_SIZE" | "QUEUE_PREFIX">;
  eventQueue: EventQueue;
  redis: Redis;
}

/** Returns one feeding pass: queues Pending events that entered the horizon; returns how many. */
export function createHorizonFeeder(deps: HorizonFeederDeps): (now: Date) => Promise<number> {
  const { db, config, eventQueue, redis } = deps;
  const key = horizonCursorKey(config.QUEUE_PREFIX);

  async function readCursor(): Promise<Cursor> {
    const stored = await redis.get(key);
    const match = stored === null ? null : /^(\d+):(.*)$/s.exec(stored);
    return match ? { time: new Date(Number(match[1])), id: match[2] ?? "" } : START;
  }
  const writeCursor = (cursor: Cursor) => redis.set(key, `${cursor.time.getTime()}:${cursor.id}`);

  return async function feed(now: Date): Promise<number> {
    const until = new Date(now.getTime() + config.ENQUEUE_HORIZON_MS - FEEDER_CLOCK_SLACK_MS);
    let cursor = await readCursor();
    let fed = 0;
    for (let page = 0; page < MAX_PAGES; page++) {
      // `scheduled_time >= cursor` bounds the (status, scheduled_time) index scan; the row
      // comparison only breaks ties within one instant.
      const rows = await db.$queryRaw<{ id: string; scheduled_time: Date }[]>`
        SELECT id, scheduled_time FROM events
        WHERE status = 'Pending' AND scheduled_time >= ${cursor.time} AND scheduled_time <= ${until}
          AND (scheduled_time, id) > (${cursor.time}, ${cursor.id})
        ORDER BY scheduled_time, id LIMIT ${config.RECONCILE_BATCH_SIZE}`;
      // Deterministic job ids: an event the API queued meanwhile keeps its job, nothing is doubled.
      await eventQueue.scheduleMany(rows.map((row) => ({ id: row.id, scheduledTime: row.scheduled_time })));
      fed += rows.length;
      const last = rows.at(-1);
      if (!last || rows.length < config.RECONCILE_BATCH_SIZE) {
        // Everything up to `until` is queued. The cursor never goes back (a horizon shortened since
        // leaves the farther jobs where they are).
        if (until > cursor.time) await writeCursor({ time: until, id: "" });
        return fed;
      }
      cursor = { time: last.scheduled_time, id: last.id };
      // Saved per page: a run cut short resumes here.
      await writeCursor(cursor);
    }
    return fed;
  };
}
