// Maintenance (the reconciler, retention, failure notices) shares the worker's event loop, its
// database pool and the machine's cores with deliveries. A reconciler pass over a burst's 10,000
// prepared events is tens of milliseconds of statements, pipelines and parsing; run inside a
// burst's claim or sending, that time is added to the burst's lateness. Bursts cluster at round
// times and the maintenance schedules do not know them, so each step of a maintenance run first
// waits for a lull in this worker's deliveries, for a bounded time: under sustained load there is
// no lull, and maintenance must still run.

/** How soon a claim, send or retry must be due for maintenance to wait for it to pass. */
export const LULL_GUARD_MS = 2_000;
/** The longest one maintenance run waits for lulls in all, so it is late, never starved. */
export const MAX_LULL_WAIT_MS = 5_000;

export interface DeliveryActivity {
  /** The earliest time a held event is claimed, sent or retried (epoch ms); undefined when none waits. */
  nextInstant(): number | undefined;
  /**
   * Resolves once no attempt waits for a slot and none counted is in flight (or, under sustained
   * load, after a bounded wait): the send scheduler's whenQuiet.
   */
  whenQuiet(): Promise<void>;
}

export interface DeliveryLull {
  /**
   * Resolves when this worker has nothing to claim, send or retry within LULL_GUARD_MS and its
   * sends are quiet, or at `deadline` (epoch ms), or at once once closed.
   */
  until(deadline: number): Promise<void>;
  /** Lets every wait go at once, and every later one too (the worker is stopping). */
  close(): void;
}

/** A pause that never waits: maintenance without deliveries beside it (tests, tools). */
export const noPause = (): Promise<void> => Promise.resolve();
/** A lull that never waits. */
export const noLull: DeliveryLull = { until: noPause, close: () => {} };

export function createDeliveryLull(activity: DeliveryActivity, guardMs = LULL_GUARD_MS): DeliveryLull {
  let closed = false;
  /** Ends the pending sleeps at close. */
  const wakers = new Set<() => void>();

  /** Resolves after `ms`, when `promise` settles if given, or at close, whichever comes first. */
  function sleep(ms: number, promise?: Promise<void>): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      wakers.add(done);
      promise?.then(done, done);
    });
  }

  return {
    async until(deadline) {
      for (;;) {
        const now = Date.now();
        if (closed || now >= deadline) return;
        const next = activity.nextInstant();
        if (next !== undefined && next - now < guardMs) {
          // Past the instant its sends keep the scheduler busy; whenQuiet below then waits for them.
          await sleep(Math.min(next, deadline) - now + 1);
          continue;
        }
        let quiet = false;
        await sleep(
          deadline - now,
          activity.whenQuiet().then(() => {
            quiet = true;
          }),
        );
        if (!quiet) return;
        // An instant may have come within the guard while the sends went quiet.
        const after = activity.nextInstant();
        if (after === undefined || after - Date.now() >= guardMs) return;
      }
    },
    close() {
      closed = true;
      for (const wake of [...wakers]) wake();
    },
  };
}
