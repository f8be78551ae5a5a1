import { describe, expect, it } from "vitest";
import { withQuery } from "./client.ts";

describe("withQuery", () => {
  it("adds the parameters that have a value, encoded, and leaves the rest out", () => {
    expect(withQuery("/api/events", { status: "Failed To Send", cursor: undefined, limit: 50, from: "" })).toBe(
      "/api/events?status=Failed+To+Send&limit=50",
    );
  });

  it("answers the path alone without parameters", () => {
    expect(withQuery("/api/events")).toBe("/api/events");
    expect(withQuery("/api/events", { cursor: undefined })).toBe("/api/events");
  });
});
