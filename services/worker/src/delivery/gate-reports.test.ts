import { expect, it } from "vitest";
import { breakerOutcome } from "./gate-reports.ts";
import type { AttemptOutcome } from "./transport.ts";

const outcome = (kind: AttemptOutcome["kind"], responseStatus: number | null): AttemptOutcome => ({
  ok: responseStatus !== null && responseStatus < 300,
  startedAt: new Date(),
  responseStatus,
  responseBody: null,
  durationMs: 1,
  error: null,
  retryAfter: null,
  kind,
});

it("counts timeouts, refused connections and 5xx answers as the breaker's failures, any other answer not", () => {
  expect(breakerOutcome(outcome("timeout", null))).toBe("f");
  expect(breakerOutcome(outcome("refused", null))).toBe("f");
  expect(breakerOutcome(outcome("answered", 500))).toBe("f");
  expect(breakerOutcome(outcome("answered", 503))).toBe("f");
  expect(breakerOutcome(outcome("answered", 200))).toBe("s");
  expect(breakerOutcome(outcome("answered", 404))).toBe("s");
  expect(breakerOutcome(outcome("answered", 429))).toBe("s");
});
