import { describe, expect, it } from "vitest";
import { labelFilters, labelsText, parseLabels, sameLabels } from "./labels.ts";

describe("a form's labels", () => {
  it("read one key:value a line, split at the first colon, blank lines ignored", () => {
    expect(parseLabels("team: ops\n\nurl:https://x.test:8080\n")).toEqual({
      labels: { team: "ops", url: "https://x.test:8080" },
    });
    expect(parseLabels("  ")).toEqual({ labels: {} });
  });

  it("refuse a line without a key or value, a key given twice, and more than 10", () => {
    expect(parseLabels("team")).toEqual({ problem: "Write each label as key:value, one a line (not “team”)" });
    expect(parseLabels(":ops")).toHaveProperty("problem");
    expect(parseLabels("team:ops\nteam:dev")).toEqual({ problem: "The label team is given twice" });
    const eleven = Array.from({ length: 11 }, (_, n) => `k${n}:v`).join("\n");
    expect(parseLabels(eleven)).toEqual({ problem: "At most 10 labels can be given" });
  });

  it("show a record's labels as the form reads them back", () => {
    const labels = { team: "ops", tier: "gold" };
    expect(labelsText(labels)).toBe("team:ops\ntier:gold");
    expect(parseLabels(labelsText(labels))).toEqual({ labels });
    expect(labelsText(null)).toBe("");
  });

  it("compare as sets of pairs", () => {
    expect(sameLabels({ a: "1", b: "2" }, { b: "2", a: "1" })).toBe(true);
    expect(sameLabels({ a: "1" }, { a: "2" })).toBe(false);
    expect(sameLabels({ a: "1" }, {})).toBe(false);
  });
});

describe("the events filter's labels", () => {
  it("split at commas and spaces into one label= parameter each", () => {
    expect(labelFilters(" team:ops, tier:gold  region:eu ")).toEqual(["team:ops", "tier:gold", "region:eu"]);
    expect(labelFilters("")).toEqual([]);
  });
});
