import { describe, expect, it } from "vitest";
import { serializeError, withoutValues } from "./logger.ts";

// The words of Postgres errors as they reach a log line: names kept, the values it quotes replaced.
// (Errors of real failed statements are checked in services/api/test/error-logs.test.ts.)

describe("withoutValues", () => {
  it("replaces the value Postgres quotes, quotes inside it included", () => {
    expect(withoutValues('invalid input syntax for type integer: "ab"c, "d"')).toBe(
      'invalid input syntax for type integer: "…"',
    );
    expect(withoutValues('value "99999999999" is out of range for type integer')).toBe(
      'value "…" is out of range for type integer',
    );
    expect(withoutValues('invalid byte sequence for encoding "UTF8": 0x00 0xe9')).toBe(
      'invalid byte sequence for encoding "UTF8": 0x…',
    );
  });

  it("keeps the names of relations, columns and constraints", () => {
    const message = 'null value in column "email" of relation "accounts" violates not-null constraint';
    expect(withoutValues(message)).toBe(message);
    expect(withoutValues('duplicate key value violates unique constraint "events_pkey"')).toBe(
      'duplicate key value violates unique constraint "events_pkey"',
    );
  });
});

describe("serializeError", () => {
  it("logs a value that is not an object as it is", () => {
    expect(serializeError("Receiver answered 500")).toBe("Receiver answered 500");
    expect(serializeError(null)).toBe(null);
  });

  it("keeps the errors of an AggregateError, and leaves out fields it does not know", () => {
    const first = Object.assign(new Error("connect ECONNREFUSED ::1:5432"), { code: "ECONNREFUSED", payload: "x" });
    const logged = serializeError(new AggregateError([first], "all failed")) as Record<string, unknown>;
    expect(logged).toMatchObject({
      type: "AggregateError",
      message: "all failed",
      errors: [{ type: "Error", code: "ECONNREFUSED", message: "connect ECONNREFUSED ::1:5432" }],
    });
    expect(JSON.stringify(logged)).not.toContain("payload");
  });
});
