import { expect, it } from "vitest";
import type { Admission, GateTicket } from "./flow-gate.ts";
import { createWaiters, enqueue, type Waiter } from "./gate-waiters.ts";

const ticket = (dueAt: number, deadline?: number): GateTicket => ({
  orgId: "org",
  origin: "https://receiver.test",
  flowKey: "flow",
  dueAt,
  timeoutMs: 1_000,
  deadline,
});

function waiter(dueAt: number, deadline?: number): Waiter & { answers: Admission[] } {
  const answers: Admission[] = [];
  return { ticket: ticket(dueAt, deadline), resolve: (admission) => answers.push(admission), held: false, answers };
}

it("keeps a line oldest due first, an attempt due as early as another after it", () => {
  const waiting: Waiter[] = [];
  for (const dueAt of [10, 30, 20, 5, 30, 40]) enqueue(waiting, waiter(dueAt));
  expect(waiting.map((each) => each.ticket.dueAt)).toEqual([5, 10, 20, 30, 30, 40]);
  const lastOf30 = waiter(30);
  enqueue(waiting, lastOf30);
  expect(waiting.indexOf(lastOf30)).toBe(5);
});

it("counts a held attempt once and hands back the newest beyond FLOW_HELD_MAX, for FLOW_RECHECK_MS later", () => {
  const held: string[] = [];
  const waiters = createWaiters({
    config: { FLOW_HELD_MAX: 2, FLOW_RECHECK_MS: 1_000 },
    metrics: { held: (reason) => held.push(reason) },
  });
  const oldest = waiter(1);
  const middle = waiter(2);
  const newest = waiter(3);
  const line = { waiting: [oldest, middle, newest], reason: "rate" as const };
  for (const each of line.waiting) waiters.markHeld(each, "rate");
  waiters.markHeld(oldest, "paused");
  expect(waiters.held).toBe(3);
  expect(held).toEqual(["rate", "rate", "rate"]);

  const before = Date.now();
  waiters.keepWithinBound(line);
  expect(line.waiting).toEqual([oldest, middle]);
  expect(waiters.held).toBe(2);
  expect(newest.answers).toHaveLength(1);
  const answer = newest.answers[0];
  expect(answer?.kind).toBe("handBack");
  if (answer?.kind === "handBack") expect(answer.at).toBeGreaterThanOrEqual(before + 1_000);

  waiters.settle(oldest, { kind: "handBack", at: 0 });
  expect(waiters.held).toBe(1);
});

it("ends the waits past their maxAgeMs with the line's reason and names the earliest deadline ahead", () => {
  const waiters = createWaiters({ config: { FLOW_HELD_MAX: 10, FLOW_RECHECK_MS: 1_000 } });
  const past = waiter(1, 100);
  const soon = waiter(2, 300);
  const later = waiter(3, 200_000);
  const never = waiter(4);
  const line = { waiting: [past, soon, later, never], reason: "parallelism" as const };
  for (const each of line.waiting) waiters.markHeld(each, "parallelism");

  expect(waiters.expire(line, 200)).toBe(300);
  expect(line.waiting).toEqual([soon, later, never]);
  expect(past.answers).toEqual([{ kind: "expired", reason: "parallelism" }]);
  expect(waiters.held).toBe(3);
  // Without a reason yet, the line ends them as paused.
  const unheld = waiter(1, 100);
  const fresh = { waiting: [unheld], reason: undefined };
  expect(waiters.expire(fresh, 200)).toBeUndefined();
  expect(fresh.waiting).toEqual([]);
  expect(unheld.answers).toEqual([{ kind: "expired", reason: "paused" }]);
  expect(waiters.held).toBe(3);
});
