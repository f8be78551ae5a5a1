// A loopback receiver for benchmarks: answers every POST 200 at once and records, per request, the
// arrival time (when its whole body had arrived, Date.now(): the moment a webhook handler can act) and the webhook-id (or x-bench-id).
//   GET /count   {"total": arrivals so far, "unique": distinct ids among them}
//   GET /report  [[id, arrivalMs], …] of every arrival since the last reset
//   POST /reset  forgets the arrivals
// Listens on 127.0.0.1:$PORT (0: any free port) and prints the port on its first line of output.
import { createServer } from "node:http";

let arrivals = [];
let ids = new Set();
const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/count") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ total: arrivals.length, unique: ids.size }));
    return;
  }
  if (req.method === "GET" && req.url === "/report") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(arrivals));
    return;
  }
  if (req.method === "POST" && req.url === "/reset") {
    arrivals = [];
    ids = new Set();
    res.end();
    return;
  }
  req.resume();
  req.on("end", () => {
    const at = Date.now();
    const id = req.headers["webhook-id"] ?? req.headers["x-bench-id"] ?? "";
    arrivals.push([id, at]);
    ids.add(id);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok");
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.on("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
