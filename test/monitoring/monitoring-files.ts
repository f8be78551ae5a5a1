import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { parse as parseYaml } from "yaml";
import { repositoryRoot } from "../support/processes.ts";

// The files of deploy/monitoring as the checks read them: the alert rules, their promtool tests and
// the Grafana dashboard, and the metric names their PromQL selects (parsed with Prometheus' own
// grammar, the one its web UI uses).

export const MONITORING_DIR = path.join(repositoryRoot, "deploy/monitoring");
export const RULES_FILE = path.join(MONITORING_DIR, "alerts.yml");
export const RULE_TESTS_DIR = path.join(MONITORING_DIR, "tests");
export const DASHBOARD_FILE = path.join(MONITORING_DIR, "grafana-dashboard.json");

/** One PromQL expression and where it comes from (an alert, or a dashboard panel's query). */
export interface Query {
  source: string;
  expr: string;
}

interface RuleFile {
  groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
}

export function alertRules(): { alert: string; expr: string }[] {
  const file = parseYaml(readFileSync(RULES_FILE, "utf8")) as RuleFile;
  return file.groups.flatMap((group) =>
    group.rules.map((rule) => ({ alert: rule.alert ?? rule.record ?? "(unnamed)", expr: rule.expr })),
  );
}

export interface RuleTestFile {
  file: string;
  rule_files: string[];
  tests: { alert_rule_test?: { alertname: string; eval_time: string; exp_alerts?: unknown[] | null }[] }[];
}

/** The promtool test files (tests/*.test.yml), parsed. */
export function ruleTestFiles(): RuleTestFile[] {
  return readdirSync(RULE_TESTS_DIR)
    .filter((name) => name.endsWith(".test.yml"))
    .sort()
    .map((name) => ({
      file: path.join("tests", name),
      ...(parseYaml(readFileSync(path.join(RULE_TESTS_DIR, name), "utf8")) as Omit<RuleTestFile, "file">),
    }));
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: { expr?: string; datasource?: { uid?: string } }[];
  panels?: Panel[];
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string }[] };
}

export function dashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")) as Dashboard;
}

/** Every panel, those inside collapsed rows too. */
export function panelsOf(board: Dashboard): Panel[] {
  return board.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
}

/**
 * Grafana's own variables, as Grafana replaces them before a query reaches Prometheus: the durations
 * here are any valid ones (the queries are only parsed and checked, not run over data).
 */
const GRAFANA_VARIABLES: Record<string, string> = { $__rate_interval: "1m", $__range: "1h", $__interval: "15s" };

/** A dashboard query as Prometheus receives it. */
export function withGrafanaVariables(expr: string): string {
  return expr.replace(/\$__\w+/g, (name) => {
    const value = GRAFANA_VARIABLES[name];
    if (value === undefined) throw new Error(`unknown Grafana variable ${name} in ${expr}`);
    return value;
  });
}

export function dashboardQueries(): Query[] {
  return panelsOf(dashboard()).flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      source: `panel "${panel.title}"`,
      expr: withGrafanaVariables(target.expr ?? ""),
    })),
  );
}

export function ruleQueries(): Query[] {
  return alertRules().map((rule) => ({ source: `alert ${rule.alert}`, expr: rule.expr }));
}

/**
 * The metric names an expression selects (`rate(foo_bucket[5m])` → `foo_bucket`). Throws on PromQL
 * the grammar does not accept, so a typo cannot hide a metric from the check.
 */
export function metricNames(expr: string): string[] {
  const tree = parser.parse(expr);
  const names = new Set<string>();
  const cursor = tree.cursor();
  do {
    if (cursor.type.isError) throw new Error(`not PromQL at ${cursor.from}: ${expr}`);
    if (cursor.name === "VectorSelector") {
      const selector = cursor.node;
      const identifier = selector.getChild("Identifier");
      if (identifier) names.add(expr.slice(identifier.from, identifier.to));
      else throw new Error(`a selector without a metric name (${expr.slice(selector.from, selector.to)}): ${expr}`);
    }
  } while (cursor.next());
  return [...names];
}

/** The sample names of a Prometheus text exposition (histograms as their _bucket, _sum and _count). */
export function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const name = /^[a-zA-Z_:][\w:]*/.exec(line)?.[0];
    if (name) names.add(name);
  }
  return names;
}
