/**
 * Calls waiters at their instant (epoch ms), never before it by the wall clock. Waiters for the same
 * instant share one timer and run in one pass: a burst due at one time is handed on together instead
 * of one timer callback at a time, and nothing else (answers being read, say) runs between them.
 */
export interface InstantClock<T> {
  /** Adds `item` to the group of `instant`; returns a function that takes it out again. */
  at(instant: number, item: T): () => void;
  /** Items waiting, over every instant. */
  readonly size: number;
  /** Takes every waiting item out without calling anyone (a stopping worker hands them back). */
  drain(): T[];
}

export function createInstantClock<T>(onInstant: (items: T[], instant: number) => void): InstantClock<T> {
  const groups = new Map<number, { items: Set<T>; timer: NodeJS.Timeout }>();
  let size = 0;

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
    size -= group.items.size;
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
      size += 1;
      return () => {
        if (!items.delete(item)) return;
        size -= 1;
        if (items.size === 0 && groups.get(instant)?.items === items) {
          clearTimeout(groups.get(instant)?.timer);
          groups.delete(instant);
        }
      };
    },
    get size() {
      return size;
    },
    drain() {
      const all: T[] = [];
      for (const group of groups.values()) {
        clearTimeout(group.timer);
        all.push(...group.items);
      }
      groups.clear();
      size = 0;
      return all;
    },
  };
}
