import { Fifo } from "./fifo.ts";
import type { OriginState } from "./origin-caps.ts";
import type { AttemptOutcome, DeliveryHttpRequest } from "./transport.ts";

/** An attempt waiting in the dispatcher (dispatcher.ts) for a slot. */
export interface WaitingAttempt {
  request: DeliveryHttpRequest;
  origin: OriginState;
  resolve: (outcome: AttemptOutcome) => void;
}

/**
 * One organization's waiting attempts in the dispatcher, one queue per origin, the origins served
 * round robin, with the organization's attempts in flight (what its share is counted against).
 */
export class OrgQueue {
  private readonly queues = new Map<string, Fifo<WaitingAttempt>>();
  /** The origins of `queues` in turn order; `next` is the one to try first. */
  private readonly order: string[] = [];
  private next = 0;
  waiting = 0;
  /** Attempts in flight that count against WORKER_CONCURRENCY. */
  counted = 0;
  /** Attempts in flight, slow ones included. */
  total = 0;

  constructor(readonly id: string) {}

  push(attempt: WaitingAttempt) {
    const key = attempt.origin.key;
    let queue = this.queues.get(key);
    if (!queue) {
      queue = new Fifo();
      this.queues.set(key, queue);
      this.order.push(key);
    }
    queue.push(attempt);
    this.waiting += 1;
  }

  /** Whether an attempt of this organization waits for `origin`. */
  waitsFor(origin: OriginState): boolean {
    return this.queues.has(origin.key);
  }

  /**
   * The next attempt whose origin has room, taking the origins in turn; undefined when every
   * origin with waiting attempts is at its cap. `waiting` is left to the caller.
   */
  takeNext(hasRoom: (origin: OriginState) => boolean): WaitingAttempt | undefined {
    for (let tried = 0; tried < this.order.length; tried++) {
      if (this.next >= this.order.length) this.next = 0;
      const key = this.order[this.next] as string;
      const queue = this.queues.get(key) as Fifo<WaitingAttempt>;
      const head = queue.peek() as WaitingAttempt;
      if (!hasRoom(head.origin)) {
        this.next += 1;
        continue;
      }
      queue.shift();
      if (queue.length === 0) {
        this.queues.delete(key);
        this.order.splice(this.next, 1);
      } else {
        this.next += 1;
      }
      return head;
    }
    return undefined;
  }
}
