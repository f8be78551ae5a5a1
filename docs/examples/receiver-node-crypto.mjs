// A receiver that verifies both signatures of a delivery with nothing but Node's own modules.
// PORT=8080 PUNCTUAL_SIGNING_SECRET=whsec_… node receiver-node-crypto.mjs
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const secret = process.env.PUNCTUAL_SIGNING_SECRET;
const TOLERANCE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 1024 * 1024;

// The Standard Webhooks key: the bytes base64-encoded after `whsec_`, or a custom secret's UTF-8 bytes.
const standardKey = secret.startsWith("whsec_")
  ? Buffer.from(secret.slice("whsec_".length), "base64")
  : Buffer.from(secret, "utf8");

// Deliveries are at least once: a retry or a replay within the tolerance has the same webhook-id.
const seen = new Set();

function safeEqual(a, b) {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function withinTolerance(seconds) {
  return Number.isFinite(seconds) && Math.abs(Date.now() / 1000 - seconds) <= TOLERANCE_SECONDS;
}

// webhook-signature: `v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`.
function verifyStandardWebhooks(headers, body) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !timestamp || !signatures) return "missing webhook-id, webhook-timestamp or webhook-signature";
  if (!/^\d+$/.test(timestamp) || !withinTolerance(Number(timestamp))) return "webhook-timestamp is too old or too new";
  const expected = createHmac("sha256", standardKey).update(`${id}.${timestamp}.`).update(body).digest("base64");
  // The header may hold several space-separated signatures; one match is enough.
  const matches = signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",");
    return version === "v1" && signature !== undefined && safeEqual(signature, expected);
  });
  return matches ? null : "webhook-signature does not match";
}

// X-Jiter-Signature: base64 HMAC-SHA256 of `<X-Jiter-Request-Timestamp>:<body>`, keyed with the
// whole secret string (`whsec_` included) as UTF-8.
function verifyJiter(headers, body) {
  const timestamp = headers["x-jiter-request-timestamp"];
  const signature = headers["x-jiter-signature"];
  if (!timestamp || !signature) return "missing X-Jiter-Request-Timestamp or X-Jiter-Signature";
  if (!/^\d+$/.test(timestamp) || !withinTolerance(Number(timestamp) / 1000)) {
    return "X-Jiter-Request-Timestamp is too old or too new";
  }
  const expected = createHmac("sha256", secret).update(`${timestamp}:`).update(body).digest("base64");
  return safeEqual(signature, expected) ? null : "X-Jiter-Signature does not match";
}

const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) req.destroy();
    else chunks.push(chunk);
  });
  req.on("end", () => {
    // Verify the raw bytes, never a re-serialized object.
    const body = Buffer.concat(chunks);
    const problem = verifyStandardWebhooks(req.headers, body) ?? verifyJiter(req.headers, body);
    if (problem) {
      console.log(`invalid: ${problem}`);
      res.writeHead(401, { "content-type": "application/json" }).end('{"message":"Invalid signature"}');
      return;
    }
    const id = req.headers["webhook-id"];
    if (seen.has(id)) {
      console.log(`duplicate ${id}`);
    } else {
      seen.add(id);
      const { payload, scheduledTime } = JSON.parse(body.toString("utf8"));
      console.log(`valid ${id} scheduled for ${scheduledTime}: ${payload}`);
    }
    res.writeHead(200).end();
  });
});

const port = Number(process.env.PORT ?? 8080);
server.listen(port, () => console.log(`listening on ${port}`));
