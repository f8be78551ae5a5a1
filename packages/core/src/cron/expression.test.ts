import { describe, expect, it } from "vitest";
import { cronExpressionNeverFires, isValidCronExpression, nextCronRuns } from "./expression.ts";

describe("cronExpressionNeverFires", () => {
  it("is true for a day of the month that none of its months has", () => {
    for (const expression of ["0 0 30 2 *", "0 0 31 2 *", "0 0 31 4,6 *", "0 0 31 11 *", "* * 30-31 FEB *"]) {
      expect({ expression, never: cronExpressionNeverFires(expression) }).toEqual({ expression, never: true });
    }
  });

  it("is false for expressions that fire, however rarely", () => {
    // A day of the week makes it fire on those days; February 29th comes every four years.
    for (const expression of ["0 0 30 2 MON", "0 0 29 2 *", "0 0 31 * *", "0 0 31 2,3 *", "*/5 * * * *"]) {
      expect({ expression, never: cronExpressionNeverFires(expression) }).toEqual({ expression, never: false });
    }
  });

  it("is false for bad syntax, which is invalid rather than impossible", () => {
    for (const expression of ["0 0 32 2 *", "61 0 1 1 *", "0 0 * 13 *", "not a cron", "0 0 30 2 * *"]) {
      expect(cronExpressionNeverFires(expression)).toBe(false);
      expect(isValidCronExpression(expression)).toBe(false);
    }
  });
});

describe("nextCronRuns", () => {
  it("gives the next times strictly after the instant, each the next run of the one before", () => {
    const after = new Date("2027-03-26T08:00:00.000Z");
    // 09:00 in Paris is 08:00 UTC until Sunday, March 28th 2027, then 07:00 UTC.
    expect(nextCronRuns("0 9 * * 1-5", "Europe/Paris", after, 3).map((time) => time.toISOString())).toEqual([
      "2027-03-29T07:00:00.000Z",
      "2027-03-30T07:00:00.000Z",
      "2027-03-31T07:00:00.000Z",
    ]);
  });

  it("gives no time for an expression that parses but never matches", () => {
    expect(nextCronRuns("0 0 31 4,6 *", "UTC", new Date("2027-01-01T00:00:00Z"), 5)).toEqual([]);
  });
});
