import { DEFAULT_USER_AGENT } from "@punctual/core";
import type { z } from "zod";
import { CROSS_SITE_REQUEST_REFUSED } from "../admin-ui/browser-guards.ts";
import { SECURE_SESSION_COOKIE, SESSION_COOKIE, SEVERAL_SESSION_COOKIES } from "../console-session/session-cookie.ts";
import { CONSOLE_API_PATH, ConsoleSessionSchema } from "../console-session/session-routes.ts";
import { CronJobSchema, CronJobWithHistorySchema, CronRunSchema } from "../cron-jobs/schemas.ts";
import { EffectiveDeliveryPolicySchema, EffectiveRetrySchema } from "../delivery-policy/schemas.ts";
import { DestinationSchema } from "../destinations/schemas.ts";
import { CancelEventsResultSchema } from "../events/cancel-events.ts";
import { NEXT_CURSOR_HEADER } from "../events/list-events.ts";
import {
  BulkReplayResultSchema,
  EventAttemptSchema,
  EventSchema,
  EventWithHistorySchema,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  TestDeliveryResultSchema,
} from "../events/schemas.ts";
import { FlowSchema, FlowWithCountsSchema } from "../flows/schemas.ts";
import { CONSOLE_ORGANIZATION_HEADER, NOT_SIGNED_IN, OTHER_ORGANIZATION_SESSION } from "../middleware/api-key-auth.ts";
import { TOO_MANY_REQUESTS } from "../rate-limit/rate-limit.ts";
import { ServiceHealthSchema } from "../routes/service-health.ts";
import { API_ROUTES } from "../routing/api-routes.ts";
import {
  type DocumentConfig,
  errorResponse,
  type Json,
  type OperationDeclaration,
  type ResponseDeclaration,
  resolveDocumented,
  type Security,
} from "../routing/route.ts";
import { CallbackStateSchema, WebhookListSchema, WebhookSchema } from "../webhooks/schemas.ts";
import { convertNamed } from "./json-schema.ts";
import {
  AccountSchema,
  ApiKeySchema,
  CreatedApiKeySchema,
  CreatedOrganizationSchema,
  EndedSigningSecretOverlapSchema,
  ErrorSchema,
  HealthSchema,
  MemberSchema,
  MembershipSchema,
  OrganizationSchema,
  ReadySchema,
  RevokedApiKeySchema,
  RotatedApiKeySchema,
  RotatedSigningSecretSchema,
} from "./response-schemas.ts";

// Contract §8: the OpenAPI 3.1 document of the whole service, assembled from the route
// declarations (routing/api-routes.ts), each beside its handler. Request bodies and query
// parameters are converted (zod 4's own `z.toJSONSchema`, JSON Schema 2020-12 as OpenAPI 3.1 uses
// it) from the very schemas the handlers validate with, built with this deployment's limits;
// responses from the record schemas the handlers answer with. This module adds what no single
// route owns: the answers of the middleware in front of the routes, components, tags.

/** The tag's description: the delivery policy fields, their defaults and rules, in one place. */
const DELIVERY_POLICY_GUIDE = [
  "How deliveries are sent and retried (contract §10.1). The create and edit bodies of events and cron jobs, " +
    "the test delivery and the organization's default (below) take these optional fields:",
  "",
  "- `method`: `POST` (default), `PUT`, `PATCH`, `GET` or `DELETE`. `GET` and `DELETE` send no body (the " +
    "signatures then cover the empty string).",
  "- `headers`: at most 20 extra request headers, 4096 bytes of names and values in all, names HTTP tokens " +
    "(case-insensitive: two spellings of one name are refused). `Host`, `Content-Length`, `Transfer-Encoding`, " +
    "`Connection`, `Keep-Alive`, `Upgrade`, `Expect`, `User-Agent`, `X-Jiter-*` and `webhook-*` cannot be set. " +
    "Default: none.",
  '- `body`: `envelope` (default: `{"payload":…,"scheduledTime":…}`, contract §5) or `raw`: the `payload` string ' +
    "itself, with the `Content-Type` of `headers`, else `application/json` when the payload parses as JSON, else " +
    "`text/plain; charset=utf-8`. With `raw` and a JSON `Content-Type` (`application/json`, `…+json`) the " +
    "payload must be JSON; this is judged on the effective values (the body's own, else the stored ones, else " +
    "the organization's default).",
  "- `timeoutMs`: one attempt's limit, 1000 to 60000 (default `DELIVERY_TIMEOUT_MS`).",
  '- `retry`: a fixed schedule `{"delaysMs": [n, …]}` (0 to 20 waits of 100 ms to 24 h) or exponential backoff ' +
    '`{"attempts": n, "backoff": "exponential", "initialDelayMs": n, "maxDelayMs": n, "jitter": bool}` (0 to 20 ' +
    "retries; wait i = min(maxDelayMs, initialDelayMs × 2^i), a random part of it with `jitter`), either one " +
    'with `"maxAgeMs"` (1 ms to 30 days: no attempt starts later than `scheduledTime` + maxAgeMs; the delivery ' +
    'is then `Failed To Send`) and `"stopOnStatus"` (distinct 4xx codes that end the delivery at once as ' +
    "`Failed To Send`). Replaced as a whole, never merged. Default: `RETRY_DELAYS_MS`. A 429 or 503 answer with " +
    "`Retry-After` delays the next attempt to at least that time (at most `RETRY_AFTER_MAX_MS`).",
  "",
  "**Answers.** Every event and cron job answer (create, edit, get, list, replay) carries the effective " +
    "`method`, `headers`, `body`, `timeoutMs` and `retry`, each filled with the deployment's default. The values " +
    "of `Authorization`, `Proxy-Authorization`, `Cookie` and of header names containing `token`, `secret`, `key` " +
    'or `password` (any case) are sent as given but answered as `"[redacted]"`, and never logged.',
  "",
  "**The organization's default** (`PUT /api/delivery-policy`) applies, field by field, to events created and " +
    "cron runs started afterwards that do not set the field themselves. An event stores its policy when it is " +
    "created and keeps it when the default changes; a replay keeps the original's. A cron job stores only its " +
    "own fields: its answers show them over the current default, which its next runs take.",
  "",
  "**Edits.** In `PUT /api/events/{eventId}` (Pending events) and `PUT /api/cronjobs/{cronJobId}` a field given " +
    "replaces the stored one, a field given as `null` is removed (the default applies again), a field left out " +
    "is kept. A refused edit changes nothing.",
].join("\n");

/** The Flows tag's description (contract §10.2). */
const FLOWS_GUIDE = (config: DocumentConfig) =>
  [
    "Named limits and pauses for an organization's deliveries (contract §10.2). An event or cron job with a " +
      "`flowKey` (1 to 64 letters, digits, `.`, `_`, `:` or `-`) belongs to that flow; a replay keeps its " +
      "original's, a cron run takes its job's when it is made.",
    "",
    "- `rate` and `periodMs`: at most `rate` attempts of the flow start in any window of `periodMs` (1000 to " +
      "86400000 ms, 1000 by default). `parallelism`: at most this many are in flight at once. Both hold across " +
      "every worker process (they are counted in Redis). First attempts, retries, cron runs and replays all count.",
    "- **Pause**: no attempt of a paused flow starts; its due deliveries wait until it is resumed (or until a " +
      "`retry.maxAgeMs` ends them), then go oldest first under the limits.",
    "- A delivery held back waits: it is not an attempt and does not fail, and its lateness is measured as " +
      "usual. A flow held back never delays another flow or another organization.",
    "",
    "A flow key needs no record: a flow without one has no limits and is not paused. `PUT` configures a flow and " +
      "`pause` gives it a record; `DELETE` removes the record (limits and pause). At most " +
      `${config.MAX_FLOWS_PER_ORG} flows per organization have a record (\`MAX_FLOWS_PER_ORG\`). A change applies ` +
      "within a few seconds: the workers keep flows' records in a short cache.",
  ].join("\n");

/** The Destinations tag's description (contract §10.3). */
const DESTINATIONS_GUIDE =
  "The health of each origin (scheme, host and port) an organization's deliveries go to (contract §10.3). After " +
  "`BREAKER_FAILURES` (default 20) attempts in a row to it failed by timeout, refused connection or 5xx, over at " +
  "least `BREAKER_MIN_SPAN_MS` (default 60 s), the origin is `Unhealthy`: its due deliveries wait (they are not " +
  "attempts and do not fail; a `retry.maxAgeMs` still ends them) and one of them is sent as a probe every " +
  "`BREAKER_PROBE_MS` (default 30 s). The first success makes it `Healthy` again and the waiting deliveries go, " +
  "oldest first. `POST /api/destinations/reset` does so at once. Each organization's origins are its own.";

const RATE_LIMIT_HEADERS = ["RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

// The console's session cookie is an alternative to the API key (an organization's session) and to
// the admin token (the operator's); the header wins when both are sent.
const SECURITY: Record<Security, Json[]> = {
  apiKey: [{ apiKey: [] }, { consoleSession: [] }],
  admin: [{ adminBearer: [] }, { consoleSession: [] }],
  adminUi: [{ adminBasic: [] }, { adminBearer: [] }],
  consoleSession: [{ consoleSession: [] }],
  none: [],
};

/** Both answers for one status: the route's own causes, then the common ones. */
function mergeResponses(own: ResponseDeclaration, common: ResponseDeclaration): ResponseDeclaration {
  const messages = [...(own.messages ?? []), ...(common.messages ?? [])];
  const headers = [...new Set([...(own.headers ?? []), ...(common.headers ?? [])])];
  return {
    ...own,
    description: (config) =>
      `${resolveDocumented(own.description, config)} ${resolveDocumented(common.description, config)}`,
    json: own.json ?? common.json,
    ...(headers.length > 0 ? { headers } : {}),
    messages,
  };
}

function responseObject(response: ResponseDeclaration, rateLimited: boolean, config: DocumentConfig): Json {
  const headers: Json = {};
  for (const header of [...(response.headers ?? []), ...(rateLimited ? RATE_LIMIT_HEADERS : [])]) {
    headers[header] = { $ref: `#/components/headers/${header}` };
  }
  const messages = (response.messages ?? []).map((message) => resolveDocumented(message, config));
  const content: Json = { ...response.content };
  if (response.json !== undefined) {
    const schema = typeof response.json === "string" ? ref(response.json) : response.json;
    const examples =
      messages.length > 0
        ? Object.fromEntries(messages.map((message, n) => [`e${n + 1}`, { summary: message, value: { message } }]))
        : undefined;
    content["application/json"] = { schema, ...(examples ? { examples } : {}) };
  }
  const listed = messages.length ? `\n\n${messages.map((m) => `- \`${m}\``).join("\n")}` : "";
  return {
    description: `${resolveDocumented(response.description, config)}${listed}`,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

function operationObject(route: OperationDeclaration, config: DocumentConfig): Json {
  // Contract §7: every /api route is rate limited (and shows the RateLimit-* headers), and so are the
  // console's session routes.
  const rateLimited = route.path.startsWith("/api/") || route.path.startsWith(`${CONSOLE_API_PATH}/`);
  const declared = { ...route.responses };
  if (rateLimited) {
    for (const [status, common] of Object.entries(commonApiResponses(route))) {
      const own = declared[status];
      declared[status] = own ? mergeResponses(own, common) : common;
    }
  }
  const responses: Json = {};
  for (const [status, response] of Object.entries(declared).sort(([a], [b]) => a.localeCompare(b))) {
    responses[status] = responseObject(response, rateLimited, config);
  }
  const description = route.description === undefined ? undefined : resolveDocumented(route.description, config);
  const parameters = route.parameters === undefined ? undefined : resolveDocumented(route.parameters, config);
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(description ? { description } : {}),
    tags: [route.tag],
    security: SECURITY[route.security],
    ...(parameters ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: !route.body.optional,
            content: { "application/json": { schema: ref(route.body.component) } },
          },
        }
      : {}),
    responses,
  };
}

/** Answers every request under /api may get before its handler runs. */
function commonApiResponses(route: OperationDeclaration): Record<string, ResponseDeclaration> {
  const { security } = route;
  const common: Record<string, ResponseDeclaration> = {};
  // A route that declares its own 429 (the sign-ins) says everything about it already.
  if (!route.responses["429"]) {
    common["429"] = {
      description: "Over the rate limit (contract §7); `Retry-After` says when to try again.",
      json: "Error",
      messages: [TOO_MANY_REQUESTS],
      headers: ["Retry-After"],
    };
  }
  if ((security === "apiKey" || security === "admin") && route.method !== "get") {
    common["403"] = errorResponse(
      "Authenticated by the console's session cookie, but not sent from this origin (`Origin`, `Sec-Fetch-Site`).",
      CROSS_SITE_REQUEST_REFUSED,
    );
  }
  if (security === "apiKey") {
    common["401"] = errorResponse(
      "The API key is missing, unknown or revoked, or the console session ended, or the request carries more " +
        "than one session cookie, or a session of another organization than the console page names.",
      "Missing API key",
      "Invalid API key",
      NOT_SIGNED_IN,
      SEVERAL_SESSION_COOKIES,
      OTHER_ORGANIZATION_SESSION,
    );
  }
  if (security === "admin") {
    common["429"] = {
      description:
        "Over the rate limit (contract §7), or this client address is blocked after `ADMIN_AUTH_FAILURES_PER_MINUTE` wrong admin tokens (the right token included, until the block ends; the operator's console session cookie, sent without `Authorization`, still works); `Retry-After` says when to try again.",
      json: "Error",
      messages: [TOO_MANY_REQUESTS],
      headers: ["Retry-After"],
    };
    common["401"] = errorResponse(
      "The admin token is missing or wrong, or the console session ended, or the request carries more than one session cookie.",
      "Missing admin token",
      "Invalid admin token",
      NOT_SIGNED_IN,
      SEVERAL_SESSION_COOKIES,
    );
    common["404"] = errorResponse("No `ADMIN_TOKEN` is configured, so the admin API does not exist.", "Not found");
  }
  return common;
}

/** Builds the document for a deployment's configuration (its limits appear in the schemas). */
export function createOpenApiDocument(
  config: DocumentConfig,
  routes: readonly OperationDeclaration[] = API_ROUTES,
): Json {
  const version = DEFAULT_USER_AGENT.split("/")[1] ?? "0.0.0";
  const limits = { maxPayloadBytes: config.MAX_PAYLOAD_BYTES, now: () => new Date() };

  const requestBodies: Record<string, z.ZodType> = {};
  for (const { body, operationId } of routes) {
    if (!body) continue;
    // Two routes naming one component would otherwise show one of the two schemas for both.
    if (body.component in requestBodies) throw new Error(`OpenAPI: ${operationId} repeats ${body.component}`);
    requestBodies[body.component] = body.schema(limits);
  }
  const requestSchemas = convertNamed(requestBodies, "input");
  const responseSchemas = convertNamed(
    {
      Error: ErrorSchema,
      Event: EventSchema,
      EventAttempt: EventAttemptSchema,
      EventWithHistory: EventWithHistorySchema,
      BulkReplayResult: BulkReplayResultSchema,
      CancelEventsResult: CancelEventsResultSchema,
      TestDeliveryResult: TestDeliveryResultSchema,
      CronJob: CronJobSchema,
      CronRun: CronRunSchema,
      CronJobWithHistory: CronJobWithHistorySchema,
      EffectiveDeliveryPolicy: EffectiveDeliveryPolicySchema,
      EffectiveRetry: EffectiveRetrySchema,
      Flow: FlowSchema,
      FlowWithCounts: FlowWithCountsSchema,
      Destination: DestinationSchema,
      Webhook: WebhookSchema,
      WebhookList: WebhookListSchema,
      CallbackState: CallbackStateSchema,
      Health: HealthSchema,
      Ready: ReadySchema,
      Account: AccountSchema,
      CreatedOrganization: CreatedOrganizationSchema,
      Organization: OrganizationSchema,
      Member: MemberSchema,
      Membership: MembershipSchema,
      CreatedApiKey: CreatedApiKeySchema,
      RotatedApiKey: RotatedApiKeySchema,
      ApiKey: ApiKeySchema,
      RevokedApiKey: RevokedApiKeySchema,
      ServiceHealth: ServiceHealthSchema,
      ConsoleSession: ConsoleSessionSchema,
      RotatedSigningSecret: RotatedSigningSecretSchema,
      EndedSigningSecretOverlap: EndedSigningSecretOverlapSchema,
    },
    "output",
  );

  const paths: Record<string, Json> = {};
  for (const route of routes) {
    paths[route.path] = { ...paths[route.path], [route.method]: operationObject(route, config) };
  }

  const header = (description: string, schema: Json = { type: "integer" }) => ({ description, schema });
  return {
    openapi: "3.1.0",
    info: {
      title: "Punctual API",
      version,
      description:
        "Scheduled HTTP delivery: signed POSTs at an exact time (events) or on a cron schedule (cron jobs). " +
        'Every error answers `{"message": "..."}`. ' +
        `Every \`/api\` route is rate limited: ${config.RATE_LIMIT_PER_MINUTE} requests per minute per API key ` +
        `(per client address without a valid key), then refused for ${config.RATE_LIMIT_BLOCK_SECONDS} s.`,
    },
    servers: [{ url: "/", description: "This server" }],
    tags: [
      { name: "Events", description: "One-off deliveries at an exact time (contract §3)" },
      { name: "Cron jobs", description: "Recurring deliveries on a cron schedule (alpha, contract §4)" },
      {
        name: "Delivery policy",
        description: DELIVERY_POLICY_GUIDE,
      },
      { name: "Flows", description: FLOWS_GUIDE(config) },
      { name: "Destinations", description: DESTINATIONS_GUIDE },
      {
        name: "Webhooks",
        description:
          "Outcome notices: an event's or cron job's `callbackUrl`, and operational webhooks (contract §10.5). " +
          "Payloads and signatures: receiving.md",
      },
      { name: "Admin", description: "Accounts, organizations, API keys, signing secrets (contract §2)" },
      { name: "Console", description: "Signing the web console in and out (a session cookie)" },
      { name: "Operations", description: "Health, metrics, this document and the dashboards (contract §8)" },
    ],
    paths,
    components: {
      schemas: { ...requestSchemas, ...responseSchemas },
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The organization's API key (`pk_…`)" },
        adminBearer: { type: "http", scheme: "bearer", description: "`ADMIN_TOKEN`" },
        adminBasic: { type: "http", scheme: "basic", description: "Any user name; the password is `ADMIN_TOKEN`" },
        consoleSession: {
          type: "apiKey",
          in: "cookie",
          name: SESSION_COOKIE,
          description:
            "The web console's session (`POST /console/api/session` or `/console/api/operator-session`): " +
            "an organization's stands for its API key, the operator's for `ADMIN_TOKEN`. Over HTTPS the cookie is " +
            `\`${SECURE_SESSION_COOKIE}\`. A change ` +
            "(not GET, HEAD or OPTIONS) made with it must come from this origin (`Origin` or `Sec-Fetch-Site: same-origin`). " +
            "A request with more than one session cookie is refused (401). The console names the organization it shows " +
            `in \`${CONSOLE_ORGANIZATION_HEADER}\`; a session of another organization is then refused (401)`,
        },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "A repeat of the same request (payload, destination, time and delivery policy fields) with the same key within 24 h returns " +
            "the first event (200) and creates nothing; a different request with that key is refused (422). " +
            `At most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`,
          schema: { type: "string", minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH },
        },
      },
      headers: {
        [NEXT_CURSOR_HEADER]: header("Present when another page exists: pass it as `cursor`.", { type: "string" }),
        "Retry-After": header("Seconds until the client may try again."),
        "RateLimit-Policy": header("The quota: `<limit>;w=<window seconds>`.", { type: "string" }),
        "RateLimit-Limit": header("Requests allowed per window (absent while the limiter is unavailable)."),
        "RateLimit-Remaining": header("Requests left in the current window."),
        "RateLimit-Reset": header("Seconds until the window (or a block) ends."),
        "WWW-Authenticate": header('`Basic realm="Punctual"`', { type: "string" }),
        "Set-Cookie": header(
          `\`${SESSION_COOKIE}=<session id>; Path=/; HttpOnly; SameSite=Strict\` (over HTTPS \`${SECURE_SESSION_COOKIE}\`, ` +
            "with `Secure`); cleared on sign-out and when a request carries more than one session cookie.",
          { type: "string" },
        ),
      },
    },
  };
}
