import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./processes.ts";

// A real Redis Cluster on loopback for tests: the machine's redis-server, one process per node on
// free ports, its files in its own temporary directory (removed at stop).

const run = promisify(execFile);

export interface ClusterNode {
  port: number;
  process: ChildProcess;
}

export interface RedisCluster {
  nodes: ClusterNode[];
  /** The seed nodes as REDIS_CLUSTER_NODES takes them. */
  seeds: string;
  /** `redis-cli -p <port> <args>`'s output, trimmed. */
  cli(port: number, ...args: string[]): Promise<string>;
  /** The ports of the current masters (a replica that took over is one). */
  masterPorts(): Promise<number[]>;
  /** The port of the master serving `slot`. */
  masterOfSlot(slot: number): Promise<number | undefined>;
  /** The replica of the master at `port`. */
  replicaOf(port: number): Promise<number | undefined>;
  /** Waits until every live node says `cluster_state:ok` and agrees on the masters. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes the cluster's files. */
  stop(): Promise<void>;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`Redis Cluster: ${what} not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A free port and a free cluster-bus port for one node. */
async function nodePorts(taken: Set<number>): Promise<[number, number]> {
  const pick = async () => {
    for (;;) {
      const port = await freePort();
      if (!taken.has(port)) {
        taken.add(port);
        return port;
      }
    }
  };
  return [await pick(), await pick()];
}

/** Starts `masters` masters with `replicasPerMaster` replicas each and waits until the cluster is ok. */
export async function startRedisCluster(options: { masters?: number; replicasPerMaster?: number } = {}) {
  const masters = options.masters ?? 3;
  const replicasPerMaster = options.replicasPerMaster ?? 1;
  const dir = await mkdtemp(join(tmpdir(), "punctual-redis-cluster-"));
  const taken = new Set<number>();
  const nodes: ClusterNode[] = [];
  const cli = async (port: number, ...args: string[]) =>
    (await run("redis-cli", ["-p", String(port), ...args], { timeout: 10_000 })).stdout.trim();

  const stop = async () => {
    await Promise.all(
      nodes.map(
        (node) =>
          new Promise<void>((resolve) => {
            if (node.process.exitCode !== null || node.process.signalCode !== null) return resolve();
            node.process.once("exit", () => resolve());
            node.process.kill("SIGKILL");
          }),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  };

  try {
    for (let index = 0; index < masters * (1 + replicasPerMaster); index++) {
      const [port, busPort] = await nodePorts(taken);
      const child = spawn(
        "redis-server",
        [
          "--port",
          String(port),
          "--cluster-port",
          String(busPort),
          "--bind",
          "127.0.0.1",
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, `nodes-${port}.conf`),
          "--cluster-node-timeout",
          "2000",
          "--save",
          "",
          "--appendonly",
          "no",
          "--dir",
          dir,
          "--maxmemory-policy",
          "noeviction",
        ],
        { stdio: "ignore" },
      );
      nodes.push({ port, process: child });
    }
    for (const node of nodes) await until(async () => (await cli(node.port, "ping")) === "PONG", 10_000, "a node up");
    await run(
      "redis-cli",
      [
        "--cluster",
        "create",
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        "--cluster-replicas",
        String(replicasPerMaster),
        "--cluster-yes",
      ],
      { timeout: 60_000 },
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const live = () => nodes.filter((node) => node.process.exitCode === null && node.process.signalCode === null);
  /** `cluster nodes` as seen from a live node: id, port, flags, master id and slot ranges. */
  const clusterNodes = async () => {
    const [first] = live();
    if (!first) return [];
    return (await cli(first.port, "cluster", "nodes"))
      .split("\n")
      .map((line) => line.split(" "))
      .map(([id = "", address = "", flags = "", master = "", , , , , ...slots]) => ({
        id,
        port: Number(address.split("@")[0]?.split(":")[1]),
        flags: flags.split(","),
        master,
        ranges: slots.filter((range) => /^\d/.test(range)).map((range) => range.split("-").map(Number)),
      }));
  };

  const cluster: RedisCluster = {
    nodes,
    seeds: nodes.map((node) => `127.0.0.1:${node.port}`).join(","),
    cli,
    async masterPorts() {
      return (await clusterNodes())
        .filter((node) => node.flags.includes("master") && !node.flags.includes("fail"))
        .map((node) => node.port)
        .sort((a, b) => a - b);
    },
    async masterOfSlot(slot) {
      return (await clusterNodes()).find(
        (node) =>
          !node.flags.includes("fail") &&
          node.ranges.some(([first = 0, last = first]) => first <= slot && slot <= last),
      )?.port;
    },
    async replicaOf(port) {
      const all = await clusterNodes();
      const master = all.find((node) => node.port === port);
      return all.find((node) => node.master === master?.id && !node.flags.includes("fail"))?.port;
    },
    async waitUntilOk(timeoutMs = 30_000) {
      await until(
        async () => {
          for (const node of live()) {
            if (!(await cli(node.port, "cluster", "info")).includes("cluster_state:ok")) return false;
          }
          return (await cluster.masterPorts()).length === masters;
        },
        timeoutMs,
        "cluster_state:ok on every node",
      );
    },
    stop,
  };
  try {
    await cluster.waitUntilOk();
    // Replicas in sync, so that a master's failure in a test has a replica ready to take over.
    await until(
      async () => {
        for (const node of nodes) {
          const info = await cli(node.port, "info", "replication");
          if (info.includes("role:slave") && !info.includes("master_link_status:up")) return false;
        }
        return true;
      },
      30_000,
      "replicas in sync",
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return cluster;
}
