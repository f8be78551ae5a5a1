import { freePort, type NodeProcess, sleep, startNode, waitForHttp } from "./processes.ts";
import { type DeliveryStats, deliveryStats } from "./stats.ts";

/** The loopback receiver (bench/receiver.mjs) in its own process, and how to read what it saw. */
export interface Receiver {
  process: NodeProcess;
  /** Where deliveries are sent. */
  url: string;
  reset(): Promise<void>;
  /**
   * Waits until `dueById.size` deliveries have arrived (or `timeoutMs` passed), then a little
   * longer so that duplicates can show, and matches the arrivals against their due times.
   */
  collect(dueById: Map<string, number>, timeoutMs: number): Promise<DeliveryStats>;
  /** Every arrival since the last reset: `[id, ms]`. */
  arrivals(): Promise<[string, number][]>;
}

/** How long to keep listening after the last expected delivery, for duplicates. */
const SETTLE_MS = 750;

export async function startReceiver(logDir: string): Promise<Receiver> {
  const port = await freePort();
  const process = startNode("receiver", "bench/receiver.mjs", { env: { PORT: String(port) }, logDir });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/count`);
  const distinctIds = async () => ((await (await fetch(`${base}/count`)).json()) as { unique: number }).unique;
  const arrivals = async () => (await (await fetch(`${base}/report`)).json()) as [string, number][];
  return {
    process,
    url: `${base}/hook`,
    async reset() {
      await fetch(`${base}/reset`, { method: "POST" });
    },
    async collect(dueById, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while ((await distinctIds()) < dueById.size && Date.now() < deadline) await sleep(100);
      await sleep(SETTLE_MS);
      return deliveryStats(dueById, await arrivals());
    },
    arrivals,
  };
}
