import { describe, expect, it } from "vitest";
import { headerRowsOf, headersOf, newHeaderRow } from "./header-rows.ts";
import { policyFormOf, policyOfForm } from "./policy-form.ts";

describe("header rows", () => {
  it("leave blank rows out and answer undefined when no header is left", () => {
    expect(headersOf([newHeaderRow("X-Source", "punctual"), newHeaderRow()])).toEqual({
      headers: { "X-Source": "punctual" },
    });
    expect(headersOf([newHeaderRow()])).toEqual({ headers: undefined });
  });

  it("turn a redacted value into a hidden row that must be entered again", () => {
    const [row] = headerRowsOf({ Authorization: "[redacted]" });
    expect(row).toMatchObject({ name: "Authorization", value: "", hidden: true });
    expect(headersOf(row ? [row] : [])).toEqual({
      problem: "Enter the value of the header 'Authorization' again: it is never shown, and a save replaces it",
    });
    expect(headersOf(row ? [{ ...row, value: "Bearer new" }] : [])).toEqual({
      headers: { Authorization: "Bearer new" },
    });
  });

  it("refuse a value without a name and a name given twice", () => {
    expect(headersOf([newHeaderRow("", "x")])).toEqual({ problem: "The header with the value 'x' has no name" });
    expect(headersOf([newHeaderRow("A", "1"), newHeaderRow("A", "2")])).toEqual({
      problem: "The header 'A' is given twice",
    });
  });
});

describe("the default policy's form", () => {
  it("gives {} when every field is left to the deployment", () => {
    expect(policyOfForm(policyFormOf({}))).toEqual({ policy: {} });
  });

  it("gives back a stored policy without secrets as it was", () => {
    const fixed = {
      method: "PUT" as const,
      body: "raw" as const,
      timeoutMs: 5_000,
      headers: { "X-Source": "punctual" },
      retry: { delaysMs: [3_000, 5_000, 10_000], maxAgeMs: 3_600_000, stopOnStatus: [404, 410] },
    };
    expect(policyOfForm(policyFormOf(fixed))).toEqual({ policy: fixed });
    const exponential = {
      retry: {
        attempts: 5,
        backoff: "exponential" as const,
        initialDelayMs: 1_000,
        maxDelayMs: 60_000,
        jitter: true,
      },
    };
    expect(policyOfForm(policyFormOf(exponential))).toEqual({ policy: exponential });
  });

  it("says which number is not one, and what an exponential schedule lacks", () => {
    expect(policyOfForm({ ...policyFormOf({}), timeoutMs: "5s" })).toEqual({
      problem: "Timeout must be a whole number",
    });
    expect(policyOfForm({ ...policyFormOf({}), retry: "exponential", attempts: "3" })).toEqual({
      problem: "First delay is required for an exponential schedule",
    });
  });
});
