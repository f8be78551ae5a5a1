import { createServer, type Server } from "node:http";
import { listenError } from "@punctual/core";
import type { Registry } from "prom-client";

/** The worker's small HTTP surface: `GET /healthz` says whether it is taking jobs; `GET /metrics`. */
export async function startHealthServer(
  port: number,
  host: string,
  isHealthy: () => boolean,
  registry?: Registry,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const healthy = isHealthy();
    if (req.method === "GET" && req.url === "/healthz") {
      res.writeHead(healthy ? 200 : 503, { "content-type": "application/json" });
      res.end(JSON.stringify(healthy ? { status: "ok" } : { message: "Worker is not running" }));
      return;
    }
    if (req.method === "GET" && req.url === "/metrics" && registry) {
      registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": registry.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify({ message: "Could not collect metrics" }));
        },
      );
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ message: "Not found" }));
  });
  await new Promise<void>((resolve, reject) => {
    // A taken port (or a host not on this machine) as one line naming the setting to change.
    server.once("error", (error) =>
      reject(
        listenError(error, { port, host, portVariable: "WORKER_HEALTH_PORT", hostVariable: "WORKER_HEALTH_HOST" }),
      ),
    );
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : port };
}
