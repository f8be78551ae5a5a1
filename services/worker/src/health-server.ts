import { createServer, type Server } from "node:http";

/** The worker's small HTTP surface: `GET /healthz` says whether it is taking jobs. */
export async function startHealthServer(
  port: number,
  isHealthy: () => boolean,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const healthy = isHealthy();
    if (req.method === "GET" && req.url === "/healthz") {
      res.writeHead(healthy ? 200 : 503, { "content-type": "application/json" });
      res.end(JSON.stringify(healthy ? { status: "ok" } : { message: "Worker is not running" }));
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ message: "Not found" }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, resolve);
  });
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : port };
}
