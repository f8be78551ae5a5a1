// A receiver that verifies deliveries with the @jiter/node SDK's own Express middleware.
// npm install express @jiter/node
// PORT=8080 PUNCTUAL_SIGNING_SECRET=whsec_… node receiver-jiter-node.mjs
import jiterModule from "@jiter/node";
import express from "express";

// @jiter/node is CommonJS: from ESM its SDK object is the default export's `default`.
const Jiter = jiterModule.default;

Jiter.init({
  // init() insists on an API key even though verifying a delivery only needs the signing secret.
  apiKey: process.env.PUNCTUAL_API_KEY ?? "unused-by-this-receiver",
  signingSecret: process.env.PUNCTUAL_SIGNING_SECRET,
  baseUrl: process.env.PUNCTUAL_API_URL ?? "http://localhost:3000/api",
  // How old X-Jiter-Request-Timestamp may be (the SDK's default is 2 minutes).
  millisecondsUntilWebhookExpiration: 5 * 60 * 1000,
});

const app = express();

app.post(
  "/webhooks/punctual",
  // The middleware re-serializes the parsed body and checks X-Jiter-Signature over it.
  express.json(),
  // It answers 401 itself for a missing or wrong signature, and 200 before calling this function.
  Jiter.Middleware.webhookHandler(async ({ payload, scheduledTime, req }) => {
    console.log(`valid ${req.header("webhook-id")} scheduled for ${scheduledTime.toISOString()}: ${payload}`);
  }),
);

// signatureIsValid throws (rather than returning false) for an expired or non-numeric timestamp.
app.use((error, _req, res, _next) => {
  console.log(`invalid: ${error.message}`);
  res.status(401).json({ message: "Invalid signature" });
});

const port = Number(process.env.PORT ?? 8080);
app.listen(port, () => console.log(`listening on ${port}`));
