/**
 * Calls waiters at their instant (epoch ms), never before it by the wall clock. Waiters for the same
 * instant share one timer and run in one pass: a burst due at one time is handed on together instead
 * of one timer callback at a time, and nothing else (answers being read, say) runs between them.
 */
export interface InstantTimers<T> {
  /** Adds `item` to the group of `instant`; returns a function that takes it out again. */
  at(instant: number, item: T): () => void;
  /** The earliest instant something waits for (epoch ms), or undefined when nothing waits. */
  next(): number | undefined;
}

export function createInstantTimers<T>(onInstant: (items: T[], instant: number) => void): InstantTimers<T> {
  const groups = new Map<number, { items: Set<T>; timer: NodeJS.Timeout }>();

  const fire = (instant: number) => {
    const group = groups.get(instant);
    if (!group) return;
    // Timers run on a monotonic clock and may fire a fraction of a millisecond early by Date.now().
    const early = instant - Date.now();
    if (early > 0) {
      group.timer = setTimeout(fire, early, instant);
      return;
    }
    groups.delete(instant);
    onInstant([...group.items], instant);
  };

  return {
    at(instant, item) {
      let group = groups.get(instant);
      if (!group) {
        group = { items: new Set(), timer: setTimeout(fire, Math.max(0, instant - Date.now()), instant) };
        groups.set(instant, group);
      }
      const { items } = group;
      items.add(item);
      return () => {
        if (!items.delete(item) || items.size > 0) return;
        const current = groups.get(instant);
        if (current?.items !== items) return;
        clearTimeout(current.timer);
        groups.delete(instant);
      };
    },
    next() {
      let earliest: number | undefined;
      for (const instant of groups.keys()) if (earliest === undefined || instant < earliest) earliest = instant;
      return earliest;
    },
  };
}
