import { createServer, type Server } from "node:net";
import { ensurePortFree, listeningUrl, StartupError, workerHealthTarget } from "@punctual/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startHealthServer } from "../../services/worker/src/health-server.ts";

// The port checks the entry points make before they start, and the listen that may still lose the
// port to another process between that check and the server's own listen.

let taken: Server;
let port: number;
beforeEach(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const address = taken.address();
  port = typeof address === "object" && address ? address.port : 0;
});
afterEach(async () => {
  await new Promise((resolve) => taken.close(resolve));
});

describe("a port in use", () => {
  it("fails the check before the start with a StartupError naming the setting", async () => {
    const target = workerHealthTarget({ WORKER_HEALTH_PORT: port, WORKER_HEALTH_HOST: "127.0.0.1" });
    const check = ensurePortFree(target);
    await expect(check).rejects.toBeInstanceOf(StartupError);
    await expect(check).rejects.toThrow(
      `Port ${port} is already in use (WORKER_HEALTH_PORT). Stop the other process or set WORKER_HEALTH_PORT in .env.`,
    );
  });

  it("fails the worker's health server's own listen with the same StartupError", async () => {
    const start = startHealthServer(port, "127.0.0.1", () => true);
    await expect(start).rejects.toBeInstanceOf(StartupError);
    await expect(start).rejects.toThrow(`Port ${port} is already in use (WORKER_HEALTH_PORT).`);
  });

  it("passes the check once the port is free again, leaving it free", async () => {
    await new Promise((resolve) => taken.close(resolve));
    const target = workerHealthTarget({ WORKER_HEALTH_PORT: port, WORKER_HEALTH_HOST: "127.0.0.1" });
    await expect(ensurePortFree(target)).resolves.toBeUndefined();
    await expect(ensurePortFree(target)).resolves.toBeUndefined();
    // Listening again for afterEach's close.
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  });
});

describe("the announced address", () => {
  it("is reached on loopback when the server listens on every interface", () => {
    expect(listeningUrl("0.0.0.0", 3000)).toBe("http://127.0.0.1:3000");
    expect(listeningUrl("::", 3000)).toBe("http://127.0.0.1:3000");
    expect(listeningUrl("127.0.0.1", 3001, "/healthz")).toBe("http://127.0.0.1:3001/healthz");
    expect(listeningUrl("::1", 3000)).toBe("http://[::1]:3000");
  });
});
