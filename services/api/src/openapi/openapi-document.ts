import {
  AddMemberInputSchema,
  type Config,
  CRON_JOB_NOT_FOUND,
  CreateAccountInputSchema,
  CreateOrganizationInputSchema,
  DEFAULT_USER_AGENT,
  EVENT_NOT_FOUND,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  keyId,
  ONLY_PENDING,
  orgId,
  RotateSecretInputSchema,
} from "@punctual/core";
import { z } from "zod";
import { CREDENTIALS_REQUIRED } from "../admin-ui/admin-credentials.ts";
import { CROSS_SITE_WRITE_REFUSED } from "../admin-ui/browser-guards.ts";
import {
  CronJobSchema,
  CronJobWithHistorySchema,
  CronRunSchema,
  cronJobRequestSchemas,
  STATUS_ONE_OF,
} from "../cron-jobs/schemas.ts";
import { NEXT_CURSOR_HEADER } from "../events/list-events.ts";
import {
  DESTINATION_URL,
  EventAttemptSchema,
  EventSchema,
  EventWithHistorySchema,
  eventRequestSchemas,
  INVALID_CURSOR,
  listEventsQuerySchema,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LIST_LIMIT,
  ONLY_CANCEL,
  TIME_IN_FUTURE,
  VALID_TIME,
} from "../events/schemas.ts";
import { TOO_MANY_REQUESTS } from "../rate-limit/rate-limit.ts";
import {
  AccountSchema,
  ApiKeySchema,
  CreatedApiKeySchema,
  CreatedOrganizationSchema,
  ErrorSchema,
  HealthSchema,
  MemberSchema,
  OrganizationSchema,
  ReadySchema,
  RevokedApiKeySchema,
  RotatedApiKeySchema,
  RotatedSigningSecretSchema,
} from "./response-schemas.ts";

// Contract §8: the OpenAPI 3.1 document of the whole service. Request bodies and query parameters
// are converted (zod 4's own `z.toJSONSchema`, JSON Schema 2020-12 as OpenAPI 3.1 uses it) from the
// very schemas the handlers validate with, built with this deployment's limits; responses from the
// record schemas the handlers answer with. Statuses and their exact messages follow the contract.

type Json = Record<string, unknown>;
type Security = "apiKey" | "admin" | "adminUi" | "none";

interface ResponseSpec {
  description: string;
  /** A component schema name, or a JSON schema, for `application/json`; absent for no body. */
  json?: string | Json;
  /** Another media type's body, e.g. `text/html`. */
  content?: Json;
  headers?: string[];
  /** Error messages this status answers with (shown as examples). */
  messages?: string[];
}

interface OperationSpec {
  method: "get" | "post" | "put" | "delete";
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  security: Security;
  parameters?: Json[];
  body?: string;
  responses: Record<string, ResponseSpec>;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });

/**
 * Two rewrites of zod's output that keep its meaning: `anyOf: [{type: T, …}, {type: "null"}]`
 * becomes `{type: [T, "null"], …}` (the form viewers such as Scalar understand), and the
 * safe-integer bounds zod puts on every `.int()` are dropped (noise in a reference).
 */
function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (typeof value !== "object" || value === null) return value;
  const schema = Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, tidy(inner)])) as Json;
  if (schema.type === "integer") {
    if (schema.minimum === Number.MIN_SAFE_INTEGER) delete schema.minimum;
    if (schema.maximum === Number.MAX_SAFE_INTEGER) delete schema.maximum;
  }
  const anyOf = schema.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const [first, second] = anyOf as Json[];
    if (
      first &&
      typeof first.type === "string" &&
      second &&
      Object.keys(second).length === 1 &&
      second.type === "null"
    ) {
      const { anyOf: _anyOf, ...rest } = schema;
      return { ...first, ...rest, type: [first.type, "null"] };
    }
  }
  return schema;
}

/** Converts a registry of named schemas; `$schema` and `$id` are dropped (components carry the name). */
function convert(named: Record<string, z.ZodType>, io: "input" | "output"): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` });
  const result: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    if (id === "__shared") throw new Error("OpenAPI: a schema referenced an unnamed shared definition");
    const { $schema: _schema, $id: _id, ...rest } = schema as Json;
    result[id] = tidy(rest) as Json;
  }
  return result;
}

/** One query parameter per property of an object schema's input side. */
function queryParameters(schema: z.ZodType, descriptions: Record<string, string> = {}): Json[] {
  const json = tidy(z.toJSONSchema(schema, { io: "input" })) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return {
      name,
      in: "query",
      required: json.required?.includes(name) ?? false,
      description: descriptions[name] ?? description,
      schema: propertySchema,
    };
  });
}

/** A path parameter whose schema is the validator's own (admin ids) or a plain string. */
function pathParameter(name: string, description: string, schema?: z.ZodType): Json {
  const json = schema ? z.toJSONSchema(schema, { io: "input" }) : { type: "string" };
  const { $schema: _schema, ...rest } = tidy(json) as Json;
  return { name, in: "path", required: true, description, schema: rest };
}

const RATE_LIMIT_HEADERS = ["RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

function operationObject(spec: OperationSpec, rateLimited: boolean): Json {
  const responses: Json = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    const headers: Json = {};
    for (const header of [...(response.headers ?? []), ...(rateLimited ? RATE_LIMIT_HEADERS : [])]) {
      headers[header] = { $ref: `#/components/headers/${header}` };
    }
    const content: Json = { ...response.content };
    if (response.json !== undefined) {
      const schema = typeof response.json === "string" ? ref(response.json) : response.json;
      const examples =
        response.messages && response.messages.length > 0
          ? Object.fromEntries(
              response.messages.map((message, n) => [`e${n + 1}`, { summary: message, value: { message } }]),
            )
          : undefined;
      content["application/json"] = { schema, ...(examples ? { examples } : {}) };
    }
    const listed = response.messages?.length ? `\n\n${response.messages.map((m) => `- \`${m}\``).join("\n")}` : "";
    responses[status] = {
      description: `${response.description}${listed}`,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      ...(Object.keys(content).length > 0 ? { content } : {}),
    };
  }
  const security: Record<Security, Json[] | undefined> = {
    apiKey: [{ apiKey: [] }],
    admin: [{ adminBearer: [] }],
    adminUi: [{ adminBasic: [] }, { adminBearer: [] }],
    none: [],
  };
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.tag],
    security: security[spec.security],
    ...(spec.parameters ? { parameters: spec.parameters } : {}),
    ...(spec.body
      ? { requestBody: { required: true, content: { "application/json": { schema: ref(spec.body) } } } }
      : {}),
    responses,
  };
}

const error = (description: string, ...messages: string[]): ResponseSpec => ({
  description,
  json: "Error",
  messages,
});

/** Answers every request under /api may get before its handler runs. */
function commonApiResponses(security: Security): Record<string, ResponseSpec> {
  const common: Record<string, ResponseSpec> = {
    "429": {
      description: "Over the rate limit (contract §7); `Retry-After` says when to try again.",
      json: "Error",
      messages: [TOO_MANY_REQUESTS],
      headers: ["Retry-After"],
    },
  };
  if (security === "apiKey") {
    common["401"] = error("The API key is missing, unknown or revoked.", "Missing API key", "Invalid API key");
  }
  if (security === "admin") {
    common["429"] = {
      description:
        "Over the rate limit (contract §7), or this client address is blocked after `ADMIN_AUTH_FAILURES_PER_MINUTE` wrong admin tokens (the right token included, until the block ends); `Retry-After` says when to try again.",
      json: "Error",
      messages: [TOO_MANY_REQUESTS],
      headers: ["Retry-After"],
    };
    common["401"] = error("The admin token is missing or wrong.", "Missing admin token", "Invalid admin token");
    common["404"] = error("No `ADMIN_TOKEN` is configured, so the admin API does not exist.", "Not found");
  }
  return common;
}

/** Answers of every request that carries a JSON body. */
const BODY_RESPONSES: Record<string, ResponseSpec> = {
  "413": error("The body is over 16 KiB.", "Request body is too large"),
  "415": error("The body is not JSON.", "Content-Type must be application/json"),
};

/** Builds the document for a deployment's configuration (its limits appear in the schemas). */
export function createOpenApiDocument(
  config: Pick<
    Config,
    | "MAX_PAYLOAD_BYTES"
    | "MAX_LIST_RESULTS"
    | "MAX_EVENTS_PER_MONTH"
    | "MAX_CRON_JOBS_PER_ORG"
    | "MAX_ORGS_PER_ACCOUNT"
    | "SEARCH_WINDOW_DAYS"
    | "HISTORY_DAYS"
    | "RATE_LIMIT_PER_MINUTE"
    | "RATE_LIMIT_BLOCK_SECONDS"
  >,
): Json {
  const version = DEFAULT_USER_AGENT.split("/")[1] ?? "0.0.0";
  const limits = { maxPayloadBytes: config.MAX_PAYLOAD_BYTES, now: () => new Date() };
  const events = eventRequestSchemas(limits);
  const cronJobs = cronJobRequestSchemas(limits);
  const maxListLimit = Math.max(MAX_LIST_LIMIT, config.MAX_LIST_RESULTS);

  const requestSchemas = convert(
    {
      CreateEventRequest: events.CreateEventSchema,
      UpdateEventRequest: events.UpdateEventSchema,
      CreateCronJobRequest: cronJobs.CreateCronJobSchema,
      UpdateCronJobRequest: cronJobs.UpdateCronJobSchema,
      CreateAccountRequest: CreateAccountInputSchema,
      CreateOrganizationRequest: CreateOrganizationInputSchema,
      AddMemberRequest: AddMemberInputSchema.omit({ orgId: true }),
      RotateSigningSecretRequest: RotateSecretInputSchema.omit({ orgId: true }),
    },
    "input",
  );
  const responseSchemas = convert(
    {
      Error: ErrorSchema,
      Event: EventSchema,
      EventAttempt: EventAttemptSchema,
      EventWithHistory: EventWithHistorySchema,
      CronJob: CronJobSchema,
      CronRun: CronRunSchema,
      CronJobWithHistory: CronJobWithHistorySchema,
      Health: HealthSchema,
      Ready: ReadySchema,
      Account: AccountSchema,
      CreatedOrganization: CreatedOrganizationSchema,
      Organization: OrganizationSchema,
      Member: MemberSchema,
      CreatedApiKey: CreatedApiKeySchema,
      RotatedApiKey: RotatedApiKeySchema,
      ApiKey: ApiKeySchema,
      RevokedApiKey: RevokedApiKeySchema,
      RotatedSigningSecret: RotatedSigningSecretSchema,
    },
    "output",
  );

  const eventId = pathParameter("eventId", "The event's id (`evt_…`)");
  const cronJobId = pathParameter("cronJobId", "The cron job's id (`cron_…`)");
  const orgIdParameter = pathParameter("orgId", "The organization's id (`org_…`)", orgId);
  const keyIdParameter = pathParameter("keyId", "The API key's id (`key_…`)", keyId);
  const payloadTooLong = `Payload must be at most ${config.MAX_PAYLOAD_BYTES} bytes`;
  const monthlyLimit = `Monthly limit of ${config.MAX_EVENTS_PER_MONTH} scheduled events reached for this organization`;

  const operations: OperationSpec[] = [
    // Events (contract §3)
    {
      method: "post",
      path: "/api/events",
      operationId: "createEvent",
      summary: "Schedule an event",
      description:
        "Commits a `Pending` event; at `scheduledTime` its payload is POSTed to `destination`, signed. " +
        "The event is stored before the answer even when the queue is unreachable (it is queued later).",
      tag: "Events",
      security: "apiKey",
      parameters: [parameterRef("IdempotencyKey")],
      body: "CreateEventRequest",
      responses: {
        "200": { description: "The new event (or, for a repeated `Idempotency-Key`, the first one).", json: "Event" },
        "400": error(
          "The body or a header is invalid; one sentence names the first problem.",
          VALID_TIME,
          TIME_IN_FUTURE,
          payloadTooLong,
          DESTINATION_URL,
          "'payload' is required",
          "Unknown field 'payloadd'",
          "Request body is not valid JSON",
        ),
        "403": error("The organization's monthly quota of scheduled events is used up.", monthlyLimit),
        ...BODY_RESPONSES,
        "500": error("Unexpected failure.", "Unable to create the event"),
      },
    },
    {
      method: "get",
      path: "/api/events",
      operationId: "getManyEvents",
      summary: "List events",
      description:
        `Visible events of the organization, by \`scheduledTime\` then \`id\`, at most ${config.MAX_LIST_RESULTS} ` +
        `per page. Start bounds are inclusive, end bounds exclusive. When more results exist the answer carries ` +
        `\`${NEXT_CURSOR_HEADER}\`; pass it back as \`cursor\`.`,
      tag: "Events",
      security: "apiKey",
      parameters: queryParameters(listEventsQuerySchema(maxListLimit), {
        scheduledStartDate: "`scheduledTime` at or after this time (ISO 8601 with a zone)",
        scheduledEndDate: "`scheduledTime` before this time",
        sentAtStartDate: `\`sentAt\` at or after this time; at most ${config.SEARCH_WINDOW_DAYS} days back, not in the future`,
        sentAtEndDate: "`sentAt` before this time",
        failedAtStartDate: `\`failedAt\` at or after this time; at most ${config.SEARCH_WINDOW_DAYS} days back, not in the future`,
        failedAtEndDate: "`failedAt` before this time",
        limit: `Page size, 1 to ${maxListLimit} (capped at ${config.MAX_LIST_RESULTS})`,
      }),
      responses: {
        "200": {
          description: "The page of events (a plain array).",
          json: { type: "array", items: ref("Event") },
          headers: [NEXT_CURSOR_HEADER],
        },
        "400": error(
          "A query parameter is invalid.",
          "Invalid status: Done",
          "Invalid date: scheduledStartDate",
          "sentAtStartDate is outside of the searchable range",
          "failedAtStartDate is outside of the searchable range",
          INVALID_CURSOR,
          "Unknown query parameter 'foo'",
        ),
        "500": error("Unexpected failure.", "Unable to get events"),
      },
    },
    {
      method: "get",
      path: "/api/events/{eventId}",
      operationId: "getEvent",
      summary: "Get an event with its delivery history",
      tag: "Events",
      security: "apiKey",
      parameters: [eventId],
      responses: {
        "200": {
          description: `The event and its delivery attempts of the last ${config.HISTORY_DAYS} days.`,
          json: "EventWithHistory",
        },
        "404": error("No such event in this organization, or no longer visible.", EVENT_NOT_FOUND),
        "500": error("Unexpected failure.", "An error occurred finding the event"),
      },
    },
    {
      method: "put",
      path: "/api/events/{eventId}",
      operationId: "editEvent",
      summary: "Edit or cancel a pending event",
      tag: "Events",
      security: "apiKey",
      parameters: [eventId],
      body: "UpdateEventRequest",
      responses: {
        "200": { description: "The updated event.", json: "Event" },
        "400": error("Invalid change, or the event is no longer Pending.", ONLY_PENDING, ONLY_CANCEL, TIME_IN_FUTURE),
        "403": error("Moving the event into a month whose quota is used up.", monthlyLimit),
        "404": error("No such event in this organization, or no longer visible.", EVENT_NOT_FOUND),
        ...BODY_RESPONSES,
        "500": error("Unexpected failure.", "Unable to update the event"),
      },
    },
    // Cron jobs (contract §4)
    {
      method: "post",
      path: "/api/cronjobs",
      operationId: "createCronJob",
      summary: "Create a cron job",
      description: "The collection also answers as `/api/cronJobs`.",
      tag: "Cron jobs",
      security: "apiKey",
      body: "CreateCronJobRequest",
      responses: {
        "200": { description: "The new cron job, `Active`, with an empty history.", json: "CronJobWithHistory" },
        "400": error("The body is invalid.", INVALID_EXPRESSION, INVALID_TIMEZONE, payloadTooLong, DESTINATION_URL),
        "403": error(
          "The organization has reached its cron job limit.",
          `Cron job limit of ${config.MAX_CRON_JOBS_PER_ORG} reached for this organization`,
        ),
        ...BODY_RESPONSES,
        "500": error("Unexpected failure.", "Unable to create the cron job"),
      },
    },
    {
      method: "get",
      path: "/api/cronjobs",
      operationId: "getManyCronJobs",
      summary: "List cron jobs",
      description: "Every cron job of the organization, oldest first, without history.",
      tag: "Cron jobs",
      security: "apiKey",
      responses: {
        "200": { description: "The cron jobs.", json: { type: "array", items: ref("CronJob") } },
        "500": error("Unexpected failure.", "Unable to retrieve cron jobs"),
      },
    },
    {
      method: "get",
      path: "/api/cronjobs/{cronJobId}",
      operationId: "getCronJob",
      summary: "Get a cron job with its run history",
      tag: "Cron jobs",
      security: "apiKey",
      parameters: [cronJobId],
      responses: {
        "200": {
          description: `The cron job and its runs of the last ${config.HISTORY_DAYS} days, newest first.`,
          json: "CronJobWithHistory",
        },
        "404": error("No such cron job in this organization.", CRON_JOB_NOT_FOUND),
        "500": error("Unexpected failure.", "An error occurred finding the cron job"),
      },
    },
    {
      method: "put",
      path: "/api/cronjobs/{cronJobId}",
      operationId: "editCronJob",
      summary: "Edit, disable or re-activate a cron job",
      tag: "Cron jobs",
      security: "apiKey",
      parameters: [cronJobId],
      body: "UpdateCronJobRequest",
      responses: {
        "200": { description: "The updated cron job.", json: "CronJobWithHistory" },
        "400": error("The body is invalid.", STATUS_ONE_OF, INVALID_EXPRESSION, INVALID_TIMEZONE),
        "404": error("No such cron job in this organization.", CRON_JOB_NOT_FOUND),
        ...BODY_RESPONSES,
        "500": error("Unexpected failure.", "Unable to edit the cron job"),
      },
    },
    {
      method: "delete",
      path: "/api/cronjobs/{cronJobId}",
      operationId: "deleteCronJob",
      summary: "Delete a cron job",
      description: "The schedule stops at once; the job's history goes with it.",
      tag: "Cron jobs",
      security: "apiKey",
      parameters: [cronJobId],
      responses: {
        "204": { description: "Deleted." },
        "404": error("No such cron job in this organization.", CRON_JOB_NOT_FOUND),
        "500": error("Unexpected failure.", "Unable to delete the cron job"),
      },
    },
    // Admin API (contract §2)
    ...adminOperations(orgIdParameter, keyIdParameter, config.MAX_ORGS_PER_ACCOUNT),
    // Operations (contract §8)
    {
      method: "get",
      path: "/api/openapi.json",
      operationId: "getOpenApiDocument",
      summary: "This document",
      tag: "Operations",
      security: "none",
      responses: { "200": { description: "The OpenAPI 3.1 document.", json: { type: "object" } } },
    },
    {
      method: "get",
      path: "/healthz",
      operationId: "getHealth",
      summary: "Liveness: the process is up",
      tag: "Operations",
      security: "none",
      responses: { "200": { description: "Up.", json: "Health" } },
    },
    {
      method: "get",
      path: "/readyz",
      operationId: "getReadiness",
      summary: "Readiness: Postgres and Redis answer",
      tag: "Operations",
      security: "none",
      responses: {
        "200": { description: "Ready.", json: "Ready" },
        "503": error("Postgres or Redis does not answer.", "Not ready: Redis unreachable"),
      },
    },
    {
      method: "get",
      path: "/metrics",
      operationId: "getMetrics",
      summary: "Prometheus metrics",
      description: "HTTP latency by route and status, deliveries by outcome, delivery lateness, queue depth.",
      tag: "Operations",
      security: "none",
      responses: {
        "200": {
          description: "Prometheus text exposition format.",
          content: { "text/plain": { schema: { type: "string" } } },
        },
      },
    },
    {
      method: "get",
      path: "/docs",
      operationId: "getApiReference",
      summary: "Interactive API reference (HTML)",
      tag: "Operations",
      security: "none",
      responses: { "200": { description: "An HTML page.", content: { "text/html": { schema: { type: "string" } } } } },
    },
    {
      method: "get",
      path: "/docs/scalar.js",
      operationId: "getApiReferenceScript",
      summary: "The reference page's script (served locally, no CDN)",
      tag: "Operations",
      security: "none",
      responses: {
        "200": { description: "JavaScript.", content: { "text/javascript": { schema: { type: "string" } } } },
      },
    },
    {
      method: "get",
      path: "/admin/queues",
      operationId: "getQueueDashboard",
      summary: "Bull Board: the queues (HTML)",
      description:
        "HTTP Basic (any user name, the password is `ADMIN_TOKEN`) or `Authorization: Bearer ADMIN_TOKEN`. " +
        "The dashboard's own assets and JSON calls live under this path too.",
      tag: "Operations",
      security: "adminUi",
      responses: {
        "200": { description: "The dashboard.", content: { "text/html": { schema: { type: "string" } } } },
        "401": {
          description: "No or wrong credentials; `WWW-Authenticate` makes a browser ask for them.",
          json: "Error",
          headers: ["WWW-Authenticate"],
          messages: [CREDENTIALS_REQUIRED],
        },
        "403": error(
          "A change (any method but GET, HEAD and OPTIONS) sent from another site (`Origin`, `Sec-Fetch-Site`).",
          CROSS_SITE_WRITE_REFUSED,
        ),
        "404": error("No `ADMIN_TOKEN` is configured, so the dashboard does not exist.", "Not found"),
        "429": {
          description:
            "This client address is blocked after `ADMIN_AUTH_FAILURES_PER_MINUTE` wrong admin tokens; `Retry-After` says when to try again.",
          json: "Error",
          messages: [TOO_MANY_REQUESTS],
          headers: ["Retry-After"],
        },
      },
    },
  ];

  const paths: Record<string, Json> = {};
  for (const spec of operations) {
    // Contract §7: every /api route is rate limited (and shows the RateLimit-* headers).
    const rateLimited = spec.path.startsWith("/api/");
    const responses = rateLimited ? { ...spec.responses, ...commonApiResponses(spec.security) } : spec.responses;
    paths[spec.path] = {
      ...paths[spec.path],
      [spec.method]: operationObject({ ...spec, responses: sortByStatus(responses) }, rateLimited),
    };
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
      { name: "Admin", description: "Accounts, organizations, API keys, signing secrets (contract §2)" },
      { name: "Operations", description: "Health, metrics, this document and the dashboards (contract §8)" },
    ],
    paths,
    components: {
      schemas: { ...requestSchemas, ...responseSchemas },
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The organization's API key (`pk_…`)" },
        adminBearer: { type: "http", scheme: "bearer", description: "`ADMIN_TOKEN`" },
        adminBasic: { type: "http", scheme: "basic", description: "Any user name; the password is `ADMIN_TOKEN`" },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "A repeat with the same key within 24 h returns the first event (200) and creates nothing. " +
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
      },
    },
  };
}

function sortByStatus(responses: Record<string, ResponseSpec>): Record<string, ResponseSpec> {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

function adminOperations(orgIdParameter: Json, keyIdParameter: Json, maxOrgs: number): OperationSpec[] {
  const conflict = (message: string) => error("It exists already.", message);
  const badInput = error("The input is invalid.", "'email' must be a valid email address", "Unknown field 'plan'");
  const failure = error("Unexpected failure.", "Unable to complete the admin request");
  const orgMissing = error("No such organization.", "Unable to find organization");
  const keyMissing = error("No such API key.", "Unable to find API key");
  const base = { tag: "Admin", security: "admin" as const };
  return [
    {
      ...base,
      method: "post",
      path: "/api/admin/accounts",
      operationId: "adminCreateAccount",
      summary: "Create an account",
      body: "CreateAccountRequest",
      responses: {
        "201": { description: "The account.", json: "Account" },
        "400": badInput,
        "409": conflict("An account with email someone@example.com already exists"),
        ...BODY_RESPONSES,
        "500": failure,
      },
    },
    {
      ...base,
      method: "post",
      path: "/api/admin/organizations",
      operationId: "adminCreateOrganization",
      summary: "Create an organization with its first API key and signing secret",
      description: "The owner's account is created when missing. The key and the secret are shown once.",
      body: "CreateOrganizationRequest",
      responses: {
        "201": { description: "The organization's ids, API key and signing secret.", json: "CreatedOrganization" },
        "400": badInput,
        "403": error(
          "The account owns its maximum of organizations.",
          `Organization limit of ${maxOrgs} reached for this account`,
        ),
        ...BODY_RESPONSES,
        "500": failure,
      },
    },
    {
      ...base,
      method: "get",
      path: "/api/admin/organizations",
      operationId: "adminListOrganizations",
      summary: "List organizations",
      parameters: [
        {
          name: "email",
          in: "query",
          required: false,
          description: "Only the organizations this account is a member of",
          schema: { type: "string", format: "email" },
        },
      ],
      responses: {
        "200": { description: "The organizations, oldest first.", json: { type: "array", items: ref("Organization") } },
        "400": error(
          "A query parameter is unknown or given more than once.",
          "Query parameter 'email' must be given only once",
          "Unknown query parameter 'mail'",
        ),
        "500": failure,
      },
    },
    {
      ...base,
      method: "post",
      path: "/api/admin/organizations/{orgId}/members",
      operationId: "adminAddMember",
      summary: "Add a member to an organization",
      parameters: [orgIdParameter],
      body: "AddMemberRequest",
      responses: {
        "201": { description: "The membership.", json: "Member" },
        "400": badInput,
        "404": orgMissing,
        "409": conflict("someone@example.com is already a member of org_…"),
        ...BODY_RESPONSES,
        "500": failure,
      },
    },
    {
      ...base,
      method: "post",
      path: "/api/admin/organizations/{orgId}/keys",
      operationId: "adminCreateApiKey",
      summary: "Create an API key",
      parameters: [orgIdParameter],
      responses: {
        "201": { description: "The new key, shown once.", json: "CreatedApiKey" },
        "400": badInput,
        "404": orgMissing,
        "500": failure,
      },
    },
    {
      ...base,
      method: "get",
      path: "/api/admin/organizations/{orgId}/keys",
      operationId: "adminListApiKeys",
      summary: "List an organization's API keys (never the keys themselves)",
      parameters: [orgIdParameter],
      responses: {
        "200": { description: "The keys, oldest first.", json: { type: "array", items: ref("ApiKey") } },
        "400": badInput,
        "404": orgMissing,
        "500": failure,
      },
    },
    {
      ...base,
      method: "post",
      path: "/api/admin/organizations/{orgId}/signing-secret/rotate",
      operationId: "adminRotateSigningSecret",
      summary: "Rotate the signing secret (generated unless one is given)",
      parameters: [orgIdParameter],
      body: "RotateSigningSecretRequest",
      responses: {
        "200": { description: "The new secret.", json: "RotatedSigningSecret" },
        "400": badInput,
        "404": orgMissing,
        ...BODY_RESPONSES,
        "500": failure,
      },
    },
    {
      ...base,
      method: "post",
      path: "/api/admin/keys/{keyId}/revoke",
      operationId: "adminRevokeApiKey",
      summary: "Revoke an API key; it stops working at once",
      parameters: [keyIdParameter],
      responses: {
        "200": { description: "When the key was revoked.", json: "RevokedApiKey" },
        "400": badInput,
        "404": keyMissing,
        "500": failure,
      },
    },
    {
      ...base,
      method: "post",
      path: "/api/admin/keys/{keyId}/rotate",
      operationId: "adminRotateApiKey",
      summary: "Replace an API key by a new one",
      parameters: [keyIdParameter],
      responses: {
        "200": { description: "The new key, shown once; the old one stopped working.", json: "RotatedApiKey" },
        "400": error("The key is revoked already.", "A revoked API key cannot be rotated; create a new key instead"),
        "404": keyMissing,
        "500": failure,
      },
    },
  ];
}
