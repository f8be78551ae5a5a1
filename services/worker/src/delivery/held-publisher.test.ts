import { expect, it } from "vitest";
import { type HeldLine, heldSummaries } from "./held-publisher.ts";

const waiting = (...attempts: [dueAt: number, held: boolean][]) =>
  attempts.map(([dueAt, held]) => ({ held, ticket: { dueAt } }));

it("sums only held attempts, by organization, flow and origin, with the oldest due time", () => {
  const lines: HeldLine[] = [
    { orgId: "a", flowKey: "f1", origin: "https://one.test", waiting: waiting([30, true], [10, true], [5, false]) },
    { orgId: "a", flowKey: null, origin: "https://one.test", waiting: waiting([20, true]) },
    { orgId: "a", flowKey: "f1", origin: "https://two.test", waiting: waiting([40, true]) },
    { orgId: "b", flowKey: "f1", origin: "https://one.test", waiting: waiting([7, false]) },
  ];
  const byOrg = heldSummaries(lines);

  expect([...byOrg.keys()]).toEqual(["a"]);
  const a = byOrg.get("a");
  expect(a?.flows).toEqual(new Map([["f1", { waiting: 3, oldestWaitingSince: 10 }]]));
  expect(a?.origins).toEqual(
    new Map([
      ["https://one.test", { waiting: 3, oldestWaitingSince: 10 }],
      ["https://two.test", { waiting: 1, oldestWaitingSince: 40 }],
    ]),
  );
});
