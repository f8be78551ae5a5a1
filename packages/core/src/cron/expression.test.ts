import { describe, expect, it } from "vitest";
import { cronExpressionNeverFires, isValidCronExpression } from "./expression.ts";

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
