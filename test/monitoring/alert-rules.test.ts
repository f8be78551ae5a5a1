import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { repositoryRoot } from "../support/processes.ts";
import { PROMTOOL, runTool, skipWithout } from "../support/system-tools.ts";
import { alertRules, dashboard, dashboardQueries, metricNames, panelsOf, ruleTestFiles } from "./monitoring-files.ts";

// deploy/monitoring checked with Prometheus' own tool, promtool (Debian's `prometheus` package):
// the rules load, each alert's unit tests pass (promtool test rules), every alert has a test where
// it fires and one where it stays quiet, and the dashboard's queries are PromQL Prometheus accepts.

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's syntax for a dashboard variable, not JavaScript's.
const DATASOURCE_VARIABLE = "${datasource}";

const scratch = mkdtempSync(path.join(tmpdir(), "punctual-monitoring-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.skipIf(skipWithout(PROMTOOL, "promtool checks of deploy/monitoring"))("alert rules and dashboard", () => {
  it("promtool accepts the rules and the configuration and passes every alert's unit tests, by the commands of docs/monitoring.md", async () => {
    // The block of "Checking the files", run as the page shows it: the page's commands are the checks.
    const doc = readFileSync(path.join(repositoryRoot, "docs/monitoring.md"), "utf8");
    const section = doc.slice(doc.indexOf("\n## Checking the files\n"));
    const script = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "false";
    expect(script).toContain("promtool test rules tests/*.test.yml");
    const run = await new Promise<{ code: number; output: string }>((resolve) => {
      execFile("bash", ["-euo", "pipefail", "-c", script], { cwd: repositoryRoot }, (error, stdout, stderr) =>
        resolve({ code: typeof error?.code === "number" ? error.code : error ? -1 : 0, output: `${stdout}${stderr}` }),
      );
    });
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`SUCCESS: ${alertRules().length} rules found`);
    expect(run.output).toContain("prometheus.yml is valid prometheus config file syntax");
    // One "Unit Testing:" per test file, each followed by its verdict.
    const verdicts = [...run.output.matchAll(/Unit Testing: +(\S+)\n +(SUCCESS|FAILED)/g)];
    expect(verdicts.map((verdict) => `${verdict[1]} ${verdict[2]}`).sort()).toEqual(
      ruleTestFiles().map((test) => `${test.file} SUCCESS`),
    );
  });

  it("promtool test rules fails a test whose alert does not fire as it expects", async () => {
    // The same test file against rules whose threshold no traffic reaches: the tool must say so,
    // or a passing run above would prove nothing.
    const unreachable = alertRules().map((rule) => ({
      alert: rule.alert,
      expr: rule.alert === "PunctualNoLiveWorker" ? "max(punctual_live_workers) < -1" : rule.expr,
    }));
    const rules = path.join(scratch, "alerts.yml");
    writeFileSync(rules, stringify({ groups: [{ name: "punctual", rules: unreachable }] }));
    const test = ruleTestFiles().find((file) => file.file.endsWith("PunctualNoLiveWorker.test.yml"));
    if (!test) throw new Error("no test file for PunctualNoLiveWorker");
    const { file: _file, ...content } = test;
    writeFileSync(path.join(scratch, "test.yml"), stringify({ ...content, rule_files: [rules] }));
    const run = await runTool(PROMTOOL, ["test", "rules", "test.yml"], { cwd: scratch });
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("alertname: PunctualNoLiveWorker");
  });

  it("has a test file for each alert, where it fires and where it stays quiet", () => {
    const alerts = alertRules().map((rule) => rule.alert);
    const tests = ruleTestFiles();
    for (const alert of alerts) {
      const file = tests.find((test) => test.file === path.join("tests", `${alert}.test.yml`));
      expect(file, `tests/${alert}.test.yml`).toBeDefined();
      expect(file?.rule_files).toEqual(["../alerts.yml"]);
      const cases = (file?.tests ?? []).flatMap((test) => test.alert_rule_test ?? []);
      expect(
        cases.every((check) => check.alertname === alert),
        `${alert}'s file tests only ${alert}`,
      ).toBe(true);
      expect(
        cases.some((check) => (check.exp_alerts ?? []).length > 0),
        `a case where ${alert} fires`,
      ).toBe(true);
      expect(
        cases.some((check) => (check.exp_alerts ?? []).length === 0),
        `a case where ${alert} stays quiet`,
      ).toBe(true);
    }
    // No test file of an alert that is gone.
    expect(tests.map((test) => test.file).sort()).toEqual(
      alerts.map((alert) => path.join("tests", `${alert}.test.yml`)).sort(),
    );
  });

  it("the dashboard's queries are PromQL that promtool accepts", async () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(20);
    // Each query as a recording rule: promtool parses it with Prometheus' own parser.
    const rules = queries.map((query, index) => ({ record: `punctual:dashboard_query_${index}`, expr: query.expr }));
    const file = path.join(scratch, "dashboard-queries.yml");
    writeFileSync(file, stringify({ groups: [{ name: "dashboard", rules }] }));
    const run = await runTool(PROMTOOL, ["check", "rules", file], { cwd: scratch });
    expect(run.code, run.output).toBe(0);
    for (const query of queries) expect(metricNames(query.expr).length, query.source).toBeGreaterThan(0);
  });

  it("the dashboard imports with a Prometheus data source of the importer's choice", () => {
    const board = dashboard();
    expect(board.uid).toBe("punctual");
    expect(board.templating.list).toContainEqual(
      expect.objectContaining({ name: "datasource", type: "datasource", query: "prometheus" }),
    );
    const panels = panelsOf(board).filter((panel) => panel.type !== "row");
    expect(new Set(panelsOf(board).map((panel) => panel.id)).size).toBe(panelsOf(board).length);
    for (const panel of panels) {
      // No data source of the exporting Grafana: the variable's choice, everywhere.
      expect(panel.datasource?.uid, panel.title).toBe(DATASOURCE_VARIABLE);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource?.uid, panel.title).toBe(DATASOURCE_VARIABLE);
    }
  });
});
