import { describe, expect, it } from "vitest";
import { flowFormOf, flowRequestOfForm, NEW_FLOW_FORM } from "./flow-form.ts";

describe("a flow's form", () => {
  it("shows a flow's period in the largest unit it is a whole number of", () => {
    expect(flowFormOf({ flowKey: "orders", rate: 5, periodMs: 120_000, parallelism: null })).toEqual({
      flowKey: "orders",
      rate: "5",
      period: "2",
      unitMs: 60_000,
      parallelism: "",
    });
    expect(flowFormOf({ flowKey: "x", rate: null, periodMs: 1_500, parallelism: 3 })).toMatchObject({
      period: "1500",
      unitMs: 1,
      parallelism: "3",
    });
  });

  it("gives back the limits of a flow as they were", () => {
    const flow = { flowKey: "billing:eu", rate: 100, periodMs: 3_600_000, parallelism: 2 };
    expect(flowRequestOfForm(flowFormOf(flow))).toEqual({
      flowKey: "billing:eu",
      body: { rate: 100, periodMs: 3_600_000, parallelism: 2 },
    });
  });

  it("says an empty limit as null (no limit), so that a save removes it", () => {
    expect(flowRequestOfForm({ ...NEW_FLOW_FORM, flowKey: " orders " })).toEqual({
      flowKey: "orders",
      body: { rate: null, periodMs: 1_000, parallelism: null },
    });
  });

  it("refuses a key the API would refuse, a number that is not whole, and a rate without a period", () => {
    expect(flowRequestOfForm({ ...NEW_FLOW_FORM, flowKey: "has space" })).toEqual({
      problem: "A flow key is 1 to 64 characters of A-Z, a-z, 0-9 and . _ : -",
    });
    expect(flowRequestOfForm({ ...NEW_FLOW_FORM, flowKey: "k".repeat(65) })).toHaveProperty("problem");
    expect(flowRequestOfForm({ ...NEW_FLOW_FORM, flowKey: "a", rate: "2.5" })).toEqual({
      problem: "The rate must be a whole number",
    });
    expect(flowRequestOfForm({ ...NEW_FLOW_FORM, flowKey: "a", parallelism: "-1" })).toEqual({
      problem: "The parallelism must be a whole number",
    });
    expect(flowRequestOfForm({ ...NEW_FLOW_FORM, flowKey: "a", rate: "5", period: "" })).toEqual({
      problem: "A rate needs its period",
    });
  });
});
