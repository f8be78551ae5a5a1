// A loopback receiver for benchmarks: answers every POST 200 at once and records, per request, the
// arrival time and the webhook-id. Prints its port on the first line; on SIGTERM or a GET /report it
// writes the arrivals as JSON.
import { createServer } from "node:http";

const arrivals = [];
const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/report") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(arrivals));
    return;
  }
  if (req.method === "POST" && req.url === "/reset") {
    arrivals.length = 0;
    res.end();
    return;
  }
  const at = Date.now();
  req.resume();
  req.on("end", () => {
    arrivals.push([req.headers["webhook-id"] ?? req.headers["x-bench-id"] ?? "", at]);
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok");
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
