import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { bindMounts, composeServices } from "../support/compose.ts";
import { MONITORING_DIR } from "./monitoring-files.ts";

// docker-compose.monitoring.yml and the Prometheus configuration it mounts point at the ports and
// files the stack really has (no Docker engine in CI to run them; promtool checks the configuration
// itself in alert-rules.test.ts).

const PROMETHEUS_CONFIG = path.join(MONITORING_DIR, "prometheus.yml");

interface PrometheusConfig {
  rule_files: string[];
  scrape_configs: {
    job_name: string;
    static_configs?: { targets: string[] }[];
    dns_sd_configs?: { names: string[]; port: number }[];
  }[];
}

const prometheusConfig = () => parseYaml(readFileSync(PROMETHEUS_CONFIG, "utf8")) as PrometheusConfig;

describe("docker-compose.monitoring.yml", () => {
  const stack = composeServices("docker-compose.yml");
  const monitoring = composeServices("docker-compose.monitoring.yml");

  it("mounts files that exist, the rules where prometheus.yml looks for them", () => {
    const mounts = [...bindMounts(monitoring.prometheus ?? {}), ...bindMounts(monitoring.grafana ?? {})];
    expect(mounts.length).toBe(5);
    for (const mount of mounts) expect(existsSync(mount.source), mount.source).toBe(true);
    const config = mounts.find((mount) => mount.source === PROMETHEUS_CONFIG);
    expect(config?.target).toBe("/etc/prometheus/prometheus.yml");
    // Rule files are found relative to the configuration's folder.
    for (const rules of prometheusConfig().rule_files) {
      const mounted = mounts.find((mount) => mount.target === path.posix.join("/etc/prometheus", rules));
      expect(mounted?.source, rules).toBe(path.join(MONITORING_DIR, rules));
    }
    // Grafana's dashboard provider reads the folder the dashboard is mounted in.
    const provider = parseYaml(readFileSync(path.join(MONITORING_DIR, "grafana/dashboards.yml"), "utf8")) as {
      providers: { options: { path: string } }[];
    };
    const dashboard = mounts.find((mount) => mount.source.endsWith("grafana-dashboard.json"));
    expect(path.posix.dirname(dashboard?.target ?? "")).toBe(provider.providers[0]?.options.path);
  });

  it("scrapes the API and every worker on the ports the stack gives them, the workers listening for it", () => {
    const jobs = new Map(prometheusConfig().scrape_configs.map((job) => [job.job_name, job]));
    // The job names the alert PunctualTargetDown expects.
    expect([...jobs.keys()].sort()).toEqual(["punctual-api", "punctual-worker"]);
    expect(jobs.get("punctual-api")?.static_configs?.[0]?.targets).toEqual([`api:${stack.api?.environment?.PORT}`]);
    const workers = jobs.get("punctual-worker")?.dns_sd_configs?.[0];
    expect(workers?.names).toEqual(["worker"]);
    expect(String(workers?.port)).toBe(stack.worker?.environment?.WORKER_HEALTH_PORT);
    // By default a worker's health port listens on 127.0.0.1 only, out of Prometheus' reach.
    expect(monitoring.worker?.environment?.WORKER_HEALTH_HOST).toBe("0.0.0.0");
  });
});
