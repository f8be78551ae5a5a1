// A receiver that verifies deliveries with the `standardwebhooks` package (webhook-signature).
// npm install standardwebhooks
// PORT=8080 PUNCTUAL_SIGNING_SECRET=whsec_… node receiver-standardwebhooks.mjs
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const secret = process.env.PUNCTUAL_SIGNING_SECRET;
// Webhook() expects `whsec_` + base64 of the key. A custom secret's key is its UTF-8 bytes: pass
// them base64-encoded.
const webhook = new Webhook(secret.startsWith("whsec_") ? secret : Buffer.from(secret, "utf8").toString("base64"));

// Deliveries are at least once: a retry or a replay within the tolerance has the same webhook-id.
const seen = new Set();

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    // Verify the raw bytes, never a re-serialized object.
    const body = Buffer.concat(chunks).toString("utf8");
    let delivery;
    try {
      // Checks the signature in constant time and the timestamp within 5 minutes of now.
      delivery = webhook.verify(body, req.headers);
    } catch (error) {
      console.log(`invalid: ${error.message}`);
      res.writeHead(401, { "content-type": "application/json" }).end('{"message":"Invalid signature"}');
      return;
    }
    const id = req.headers["webhook-id"];
    if (seen.has(id)) {
      console.log(`duplicate ${id}`);
    } else {
      seen.add(id);
      console.log(`valid ${id} scheduled for ${delivery.scheduledTime}: ${delivery.payload}`);
    }
    res.writeHead(200).end();
  });
});

const port = Number(process.env.PORT ?? 8080);
server.listen(port, () => console.log(`listening on ${port}`));
