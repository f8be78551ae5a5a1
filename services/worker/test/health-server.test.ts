import type { AddressInfo } from "node:net";
import { loadConfig } from "@punctual/core";
import { describe, expect, it } from "vitest";
import { startHealthServer } from "../src/health-server.ts";

describe("the worker's health port", () => {
  it("listens on 127.0.0.1 by default, and on the host WORKER_HEALTH_HOST names", async () => {
    const defaults = loadConfig({});
    expect(defaults.WORKER_HEALTH_HOST).toBe("127.0.0.1");
    for (const host of [defaults.WORKER_HEALTH_HOST, loadConfig({ WORKER_HEALTH_HOST: "::1" }).WORKER_HEALTH_HOST]) {
      const { server, port } = await startHealthServer(0, host, () => true);
      try {
        expect((server.address() as AddressInfo).address).toBe(host);
        const url = host.includes(":") ? `http://[${host}]:${port}/healthz` : `http://${host}:${port}/healthz`;
        const response = await fetch(url);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ status: "ok" });
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });
});
