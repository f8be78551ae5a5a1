import { describe, expect, it } from "vitest";
import { withQuery } from "./client.ts";

describe("withQuery", () => {
  it("adds the parameters that have a value, encoded, and leaves the rest out", () => {
    expect(withQuery("/api/events", { status: "Failed To Send", cursor: undefined, limit: 50, from: "" })).toBe(
      "/api/events?status=Failed+To+Send&limit=50",
    );
  });

  it("repeats a parameter given as a list, once per item", () => {
    expect(withQuery("/api/events", { label: ["team:ops", "tier:gold"], flowKey: "f1" })).toBe(
      "/api/events?label=team%3Aops&label=tier%3Agold&flowKey=f1",
    );
  });

  it("answers the path alone without parameters", () => {
    expect(withQuery("/api/events")).toBe("/api/events");
    expect(withQuery("/api/events", { cursor: undefined })).toBe("/api/events");
  });
});
