import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadConfig } from "@punctual/core";
import { createOpenApiDocument } from "../services/api/src/openapi/openapi-document.ts";

// Renders docs/api.md from the OpenAPI document, so the Markdown reference cannot drift from what
// the API serves at /api/openapi.json: every endpoint, parameter, field, status and error message
// below comes from the document. Only the example values are chosen here.
//
//   node --import tsx scripts/api-docs.ts          rewrites docs/api.md
//   node --import tsx scripts/api-docs.ts --check  exits 1 when docs/api.md is stale

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
// The document is plain JSON; a loose shape keeps this renderer independent of how it is built.
// biome-ignore lint/suspicious/noExplicitAny: walked as untyped JSON
type Node = Record<string, any>;

const METHODS = ["get", "post", "put", "patch", "delete"] as const;
const BASE_URL = "http://localhost:3000";
/** Headers every counted answer carries: described once in the introduction, not per status. */
const RATE_LIMIT_HEADER = /^RateLimit-/;
/** A fixed instant for every example time, so the output is the same on every run. */
const EXAMPLE_TIME = "2026-01-15T09:30:00.000Z";
/** What the descriptions' "contract §N" refers to; the same sections name the headings of decisions.md. */
const CONTRACT_NOTE =
  "**“Contract §N”** in a description names the part of Punctual's interface contract the answer follows: " +
  "§2 accounts, organizations and keys; §3 events; §4 cron jobs; §5 delivery; §6 states and reliability; " +
  "§7 limits; §8 operations; §9 the second version's additions; §10 the third version's. [decisions.md](decisions.md) records each " +
  "choice made where the contract leaves something open.";
/** Stands for a future time in request examples; the curl commands compute it. */
const FUTURE_TIME = "$WHEN";

/** Example values of properties and parameters, by name, then by `Schema.property`. */
const EXAMPLE_VALUES: Record<string, Json> = {
  payload: '{"hello":"world"}',
  requestData: '{"hello":"world"}',
  destination: "https://example.com/webhooks/punctual",
  expression: "*/15 * * * *",
  cron: "*/15 * * * *",
  timezone: "Europe/Paris",
  neverFires: false,
  month: "2026-01",
  email: "owner@example.com",
  ownerEmail: "owner@example.com",
  name: "Acme",
  eventId: "evt_01kf2x3y4z5a6b7c8d9e0f1g2h",
  cronJobId: "cron_01kf2x3y4z5a6b7c8d9e0f1g2h",
  org: "org_01kf2x3y4z5a6b7c8d9e0f1g2h",
  orgId: "org_01kf2x3y4z5a6b7c8d9e0f1g2h",
  accountId: "acc_01kf2x3y4z5a6b7c8d9e0f1g2h",
  keyId: "key_01kf2x3y4z5a6b7c8d9e0f1g2h",
  revokedKeyId: "key_01kf2w9x8y7z6a5b4c3d2e1f0g",
  apiKey: "pk_9bT3xQ2mV7sK1pL0wE4rY6uI8oA5dF3gH2jK9lZ0xC",
  prefix: "pk_9bT3xQ2m",
  signingSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  responseStatus: 200,
  responseData: '{"received":true}',
  durationMs: 87,
  attempt: 1,
  attempts: 1,
  members: 1,
  activeApiKeys: 1,
  scheduledTime: "2026-01-15T10:00:00.000Z",
  scheduledFor: "2026-01-15T09:45:00.000Z",
  nextExecutionDate: "2026-01-15T10:00:00.000Z",
  at: "2026-01-15T09:45:00.002Z",
  "Event.id": "evt_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "EventWithHistory.id": "evt_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "CronJob.id": "cron_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "CronJobWithHistory.id": "cron_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "CronRun.id": "run_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "CronRun.status": "Sent",
  "Account.id": "acc_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "Organization.id": "org_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "ApiKey.id": "key_01kf2x3y4z5a6b7c8d9e0f1g2h",
  "ApiKey.revokedAt": null,
  "RotatedSigningSecret.previousSecretValidUntil": "2026-01-16T09:30:00.000Z",
  // The effective delivery policy of a record without one of its own: the deployment's defaults.
  method: "POST",
  timeoutMs: 10000,
  delaysMs: [3000, 5000, 10000],
  maxAgeMs: null,
  stopOnStatus: [],
  "DeliveryPolicy.headers": { Authorization: "[redacted]", "X-Source": "punctual" },
  "DeliveryPolicy.timeoutMs": 30000,
  "DeliveryPolicy.retry": { attempts: 8, backoff: "exponential", initialDelayMs: 1000, maxDelayMs: 300000 },
  // Flows (contract §10.2): a flow in the path and in flows' records; events and cron jobs in none.
  flowKey: "invoices",
  "Event.flowKey": null,
  "EventWithHistory.flowKey": null,
  "CronJob.flowKey": null,
  "CronJobWithHistory.flowKey": null,
  rate: 50,
  periodMs: 1000,
  parallelism: 5,
  paused: false,
  "FlowWithCounts.waiting": 12,
  "FlowWithCounts.inFlight": 5,
  "FlowWithCounts.oldestWaitingSince": "2026-01-15T09:29:58.000Z",
  // Schedules (contract §10.4): a job with an expression and the defaults.
  catchUpWindowMs: 3600000,
  jitterMs: 0,
  // Destination health (contract §10.3): an origin that stopped answering.
  origin: "https://example.com",
  "Destination.state": "Unhealthy",
  consecutiveFailures: 20,
  "Destination.since": "2026-01-15T09:21:07.000Z",
  "Destination.waiting": 37,
  "Destination.oldestWaitingSince": "2026-01-15T09:21:30.000Z",
};

/** A delivery policy as a request example sets it (contract §10.1). */
const POLICY_EXAMPLE: Record<string, Json> = {
  method: "PUT",
  headers: { Authorization: "Bearer <receiver token>", "Content-Type": "application/json" },
  body: "raw",
  timeoutMs: 30000,
  retry: { attempts: 8, backoff: "exponential", initialDelayMs: 1000, maxDelayMs: 300000, jitter: true },
};

/** Optional response properties left out of examples: they describe a later state than the rest. */
const OMITTED_IN_EXAMPLES = new Set([
  "Event.sentAt",
  "Event.failedAt",
  "EventWithHistory.sentAt",
  "EventWithHistory.failedAt",
]);

/** Top-level fields of response examples that differ by operation, by operationId. */
const RESPONSE_FIELDS: Record<string, Record<string, Json>> = {
  createCronJob: { history: [] },
  previewCronJob: {
    expression: "0 9 * * 1-5",
    times: ["2026-01-16T08:00:00.000Z", "2026-01-19T08:00:00.000Z", "2026-01-20T08:00:00.000Z"],
    firings: ["2026-01-16T08:00:00.000Z", "2026-01-19T08:00:00.000Z", "2026-01-20T08:00:00.000Z"].map((at, index) => ({
      at,
      run: index + 1,
      sendFrom: at,
      sendUntil: at,
    })),
  },
  editEvent: { status: "Cancelled" },
  replayEvent: { id: "evt_01kf2y7q3r5s8t1v4w6x9z0a2b", replayOf: "evt_01kf2x3y4z5a6b7c8d9e0f1g2h" },
  replayEvents: { replayed: 2, events: ["evt_01kf2y7q3r5s8t1v4w6x9z0a2b", "evt_01kf2y7q3r5s8t1v4w6x9z0a2c"] },
  testDelivery: { responseBody: '{"received":true}' },
  pauseFlow: { paused: true },
  resetDestination: { state: "Healthy", consecutiveFailures: 0, since: EXAMPLE_TIME },
};

/** Request examples where the fields alone would not show the common use, by operationId. */
const REQUEST_EXAMPLES: Record<string, { title: string; body: Json }[]> = {
  createEvent: [
    {
      title: "",
      body: {
        payload: '{"hello":"world"}',
        destination: "https://example.com/webhooks/punctual",
        scheduledTime: FUTURE_TIME,
      },
    },
    {
      title: "With a delivery policy",
      body: {
        payload: '{"hello":"world"}',
        destination: "https://example.com/webhooks/punctual",
        scheduledTime: FUTURE_TIME,
        ...POLICY_EXAMPLE,
      },
    },
    {
      title: "In a flow",
      body: {
        payload: '{"invoice":"INV-1042"}',
        destination: "https://example.com/webhooks/punctual",
        scheduledTime: FUTURE_TIME,
        flowKey: "invoices",
      },
    },
  ],
  editEvent: [
    { title: "Move it", body: { scheduledTime: FUTURE_TIME } },
    { title: "Cancel it", body: { status: "Cancelled" } },
    { title: "Give it a longer timeout, back to the default retries", body: { timeoutMs: 30000, retry: null } },
  ],
  createCronJob: [
    {
      title: "",
      body: {
        payload: '{"hello":"world"}',
        destination: "https://example.com/webhooks/punctual",
        expression: "*/15 * * * *",
        timezone: "Europe/Paris",
      },
    },
    {
      title: "Every 10 minutes for a day, at most 50 runs, each sent within 30 s of its time",
      body: {
        payload: '{"hello":"world"}',
        destination: "https://example.com/webhooks/punctual",
        every: "PT10M",
        startAt: "2026-02-01T08:00:00+01:00",
        endAt: "2026-02-02T08:00:00+01:00",
        maxRuns: 50,
        overlap: "skip",
        jitterMs: 30000,
      },
    },
    {
      title: "Every 30 seconds, missed firings of the last 10 minutes caught up",
      body: {
        payload: '{"hello":"world"}',
        destination: "https://example.com/webhooks/punctual",
        expression: "*/30 * * * * *",
        catchUp: "all",
        catchUpWindowMs: 600000,
      },
    },
    {
      title: "With a delivery policy",
      body: {
        payload: '{"hello":"world"}',
        destination: "https://example.com/webhooks/punctual",
        expression: "*/15 * * * *",
        headers: { "X-Api-Key": "<receiver key>" },
        retry: { delaysMs: [1000, 60000], stopOnStatus: [404, 410] },
      },
    },
  ],
  setDeliveryPolicy: [
    {
      title: "",
      body: {
        headers: { Authorization: "Bearer <receiver token>", "X-Source": "punctual" },
        timeoutMs: 30000,
        retry: { attempts: 8, backoff: "exponential", initialDelayMs: 1000, maxDelayMs: 300000 },
      },
    },
    { title: "Clear it", body: {} },
  ],
  testDelivery: [
    { title: "", body: { destination: "https://example.com/webhooks/punctual", payload: '{"hello":"world"}' } },
  ],
  replayEvent: [
    { title: "Send it again now", body: {} },
    { title: "Send it again later", body: { scheduledTime: FUTURE_TIME } },
  ],
  replayEvents: [
    {
      title: "Every failure since a given time",
      body: { status: "Failed To Send,Failed To Queue", failedAtStartDate: "2026-01-15T00:00:00Z" },
    },
  ],
  editCronJob: [
    { title: "Change its schedule", body: { expression: "0 9 * * 1-5", timezone: "Europe/Paris" } },
    { title: "Pause it", body: { status: "Disabled" } },
    {
      title: "Run it every 2 hours instead, until the end of March",
      body: { every: "PT2H", endAt: "2026-03-31T23:59:59Z" },
    },
    { title: "Back to an expression, without an end", body: { expression: "0 6 * * *", endAt: null } },
  ],
  setFlow: [
    { title: "50 a second, 5 at a time", body: { rate: 50, periodMs: 1000, parallelism: 5 } },
    { title: "1,000 an hour", body: { rate: 1000, periodMs: 3600000 } },
    { title: "Remove the limits, keep a pause", body: {} },
  ],
  resetDestination: [{ title: "", body: { origin: "https://example.com" } }],
  adminRotateSigningSecret: [
    { title: "A generated secret", body: {} },
    { title: "A secret of your own", body: { signingSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" } },
  ],
};

/** Query strings of request examples, by operationId (parameters are optional, so none is implied). */
const QUERY_EXAMPLES: Record<string, string> = {
  getManyEvents: "status=Pending&limit=100",
  getStats: "from=2026-01-14T00:00:00Z&to=2026-01-15T00:00:00Z&bucket=hour",
  previewCronJob: "expression=0%209%20*%20*%201-5&timezone=Europe/Paris&count=3",
  adminListOrganizations: "email=owner@example.com",
};

interface Operation {
  method: string;
  path: string;
  op: Node;
}

/** The document's own `$ref` resolution (local references only, which is all it uses). */
function resolveRef(document: Node, node: Node | undefined): Node | undefined {
  let current = node;
  const seen = new Set<string>();
  while (current && typeof current.$ref === "string") {
    if (seen.has(current.$ref)) throw new Error(`Circular $ref ${current.$ref}`);
    seen.add(current.$ref);
    current = current.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce<Node | undefined>((parent, key) => parent?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], document);
  }
  return current;
}

function refName(node: Node | undefined): string | undefined {
  return typeof node?.$ref === "string" ? node.$ref.split("/").at(-1) : undefined;
}

/** Text safe inside a Markdown table cell. */
function cell(text: string): string {
  return text
    .replace(/\|/g, "\\|")
    .replace(/\r?\n+/g, " ")
    .trim();
}

/** Inline code that survives backticks inside it. */
function code(text: string): string {
  const fence = text.includes("`") ? "``" : "`";
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** The type of a schema as a reader says it: `string (date-time)`, `integer \| null`, `array of Event`. */
function typeOf(document: Node, schema: Node | undefined): string {
  if (!schema) return "any";
  const name = refName(schema);
  const resolved = resolveRef(document, schema) ?? {};
  if (name && resolved.type === "object") return name;
  const variants = resolved.oneOf ?? resolved.anyOf;
  if (Array.isArray(variants)) return variants.map((variant: Node) => typeOf(document, variant)).join(" | ");
  if (resolved.type === "array") return `array of ${typeOf(document, resolved.items)}`;
  const types: string[] = Array.isArray(resolved.type) ? resolved.type : resolved.type ? [resolved.type] : [];
  const base = types.length > 0 ? types.join(" | ") : "any";
  return resolved.format ? `${base} (${resolved.format})` : base;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** Every rule a schema states besides its type, in words. */
function constraintsOf(document: Node, schema: Node | undefined): string {
  const resolved = resolveRef(document, schema) ?? {};
  const rules: string[] = [];
  if (resolved.const !== undefined) rules.push(`exactly ${code(JSON.stringify(resolved.const))}`);
  if (Array.isArray(resolved.enum))
    rules.push(`one of ${resolved.enum.map((value: Json) => code(String(value))).join(", ")}`);
  if (resolved.minLength !== undefined) rules.push(`at least ${plural(resolved.minLength, "character")}`);
  if (resolved.maxLength !== undefined) rules.push(`at most ${plural(resolved.maxLength, "character")}`);
  if (resolved.minimum !== undefined) rules.push(`≥ ${resolved.minimum}`);
  if (resolved.maximum !== undefined) rules.push(`≤ ${resolved.maximum}`);
  if (resolved.minItems !== undefined) rules.push(`at least ${plural(resolved.minItems, "item")}`);
  if (resolved.maxItems !== undefined) rules.push(`at most ${plural(resolved.maxItems, "item")}`);
  if (resolved.pattern !== undefined) rules.push(`matches ${code(resolved.pattern)}`);
  if (resolved.default !== undefined) rules.push(`default ${code(JSON.stringify(resolved.default))}`);
  return rules.join("; ");
}

/** An example value for a schema: its own examples first, then the names above, then its type. */
function exampleOf(document: Node, schema: Node | undefined, key: string, mode: "request" | "response"): Json {
  const name = refName(schema);
  const resolved = resolveRef(document, schema) ?? {};
  if (Array.isArray(resolved.examples) && resolved.examples.length > 0) return resolved.examples[0];
  if (resolved.example !== undefined) return resolved.example;
  // A time sent in a request must lie ahead: the curl commands compute one.
  if (mode === "request" && resolved.format === "date-time") return FUTURE_TIME;
  // `key` is `Schema.property` inside a named schema, else the bare property name.
  const property = key.split(".").at(-1) ?? key;
  if (key in EXAMPLE_VALUES) return EXAMPLE_VALUES[key] ?? null;
  if (property in EXAMPLE_VALUES) return EXAMPLE_VALUES[property] ?? null;
  if (resolved.default !== undefined) return resolved.default;
  if (resolved.const !== undefined) return resolved.const;
  // A nullable field nothing names above is shown in its usual, empty state (an attempt's `error`).
  if (Array.isArray(resolved.type) && resolved.type.includes("null")) return null;
  if (Array.isArray(resolved.enum) && resolved.enum.length > 0) return resolved.enum[0];
  const variants = resolved.oneOf ?? resolved.anyOf;
  if (Array.isArray(variants) && variants.length > 0) return exampleOf(document, variants[0], key, mode);
  const types: string[] = Array.isArray(resolved.type) ? resolved.type : [resolved.type];
  const type = types.find((candidate) => candidate !== "null") ?? types[0];
  switch (type) {
    case "object": {
      const value: Record<string, Json> = {};
      const required = new Set<string>(resolved.required ?? []);
      for (const [prop, propSchema] of Object.entries<Node>(resolved.properties ?? {})) {
        const qualified = `${name ?? ""}.${prop}`;
        if (mode === "response" && !required.has(prop) && OMITTED_IN_EXAMPLES.has(qualified)) continue;
        value[prop] = exampleOf(document, propSchema, name ? qualified : prop, mode);
      }
      return value;
    }
    case "array":
      return [exampleOf(document, resolved.items, refName(resolved.items) ?? property, mode)];
    case "integer":
    case "number":
      return resolved.minimum ?? 1;
    case "boolean":
      return true;
    case "null":
      return null;
    case "string":
      if (resolved.format === "date-time") return EXAMPLE_TIME;
      if (resolved.format === "uri") return "https://example.com/webhooks/punctual";
      if (resolved.format === "email") return "owner@example.com";
      return "string";
    default:
      return null;
  }
}

/** The error messages a status lists as examples of its `{message}` body. */
function messagesOf(response: Node): string[] {
  const messages: string[] = [];
  for (const media of Object.values<Node>(response.content ?? {})) {
    const examples = [
      ...(media.example !== undefined ? [media.example] : []),
      ...Object.values<Node>(media.examples ?? {}).map((example) => example.value),
    ];
    for (const example of examples) {
      if (example && typeof example.message === "string" && !messages.includes(example.message)) {
        messages.push(example.message);
      }
    }
  }
  return messages;
}

/** A status's description without the bullet list of messages the table shows in its own column. */
function prose(description: string | undefined, messages: string[]): string {
  if (!description) return "";
  // The document writes each message in single backticks; `code` may have doubled them.
  const listed = new Set(messages.flatMap((message) => [`- ${code(message)}`, `- \`${message}\``]));
  return description
    .split("\n")
    .filter((line) => !listed.has(line.trim()))
    .join("\n")
    .trim();
}

function authOf(document: Node, operation: Node): { text: string; curl: string[] } {
  const requirements: Node[] = operation.security ?? document.security ?? [];
  const schemes: Node = document.components?.securitySchemes ?? {};
  const texts: string[] = [];
  let curl: string[] = [];
  for (const requirement of requirements) {
    for (const name of Object.keys(requirement)) {
      const scheme = schemes[name] ?? {};
      if (scheme.type === "apiKey" && scheme.in === "cookie") {
        texts.push(`the console's session cookie ${code(scheme.name)}`);
      } else if (scheme.type === "apiKey") {
        texts.push(`${code(`${scheme.name}: <API key>`)} (${scheme.in})`);
        if (curl.length === 0) curl = [`-H "${scheme.name}: $API_KEY"`];
      } else if (scheme.type === "http" && scheme.scheme === "bearer") {
        texts.push(code("Authorization: Bearer <ADMIN_TOKEN>"));
        if (curl.length === 0) curl = ['-H "Authorization: Bearer $ADMIN_TOKEN"'];
      } else if (scheme.type === "http" && scheme.scheme === "basic") {
        texts.push(`HTTP Basic (${scheme.description ?? "user and password"})`);
      } else {
        texts.push(name);
      }
    }
  }
  return { text: texts.length > 0 ? texts.join(" or ") : "none", curl };
}

function parametersOf(document: Node, path: Node, operation: Node): Node[] {
  const byKey = new Map<string, Node>();
  for (const raw of [...(path.parameters ?? []), ...(operation.parameters ?? [])]) {
    const parameter = resolveRef(document, raw);
    if (parameter) byKey.set(`${parameter.in}:${parameter.name}`, parameter);
  }
  return [...byKey.values()];
}

/** A curl command for the operation; one per request example. */
function curlOf(document: Node, entry: Operation, parameters: Node[], body: Json | undefined): string {
  const { method, path, op } = entry;
  let url = path.replace(/\{([^}]+)\}/g, (_match, name: string) => String(EXAMPLE_VALUES[name] ?? `<${name}>`));
  const query = op.operationId ? QUERY_EXAMPLES[op.operationId] : undefined;
  if (query) url += `?${query}`;
  const lines = [`curl -s${method === "get" ? "" : ` -X ${method.toUpperCase()}`} "${BASE_URL}${url}"`];
  lines.push(...authOf(document, op).curl);
  for (const parameter of parameters) {
    if (parameter.in === "header" && parameter.name === "Idempotency-Key") lines.push(`-H "Idempotency-Key: order-42"`);
  }
  let prefix = "";
  if (body !== undefined) {
    let json = JSON.stringify(body);
    if (json.includes(`"${FUTURE_TIME}"`)) {
      prefix = "WHEN=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)\n";
      json = json.replaceAll(`"${FUTURE_TIME}"`, `"'"$WHEN"'"`);
    }
    lines.push("-H 'content-type: application/json'", `-d '${json}'`);
  }
  return prefix + lines.join(" \\\n  ");
}

function renderOperation(document: Node, entry: Operation, lines: string[]): void {
  const { method, path, op } = entry;
  const pathItem: Node = document.paths[path];
  lines.push(`### ${op.summary ?? `${method.toUpperCase()} ${path}`}`, "");
  lines.push(`${code(`${method.toUpperCase()} ${path}`)} · auth: ${authOf(document, op).text}`, "");
  if (op.description) lines.push(op.description, "");

  const parameters = parametersOf(document, pathItem, op);
  if (parameters.length > 0) {
    lines.push("| parameter | in | type | required | description | constraints |", "|---|---|---|---|---|---|");
    for (const parameter of parameters) {
      lines.push(
        `| ${code(parameter.name)} | ${parameter.in} | ${cell(typeOf(document, parameter.schema))} | ${parameter.required ? "yes" : "no"} | ${cell(parameter.description ?? "")} | ${cell(constraintsOf(document, parameter.schema))} |`,
      );
    }
    lines.push("");
  }

  const requestBody = resolveRef(document, op.requestBody);
  const requestMedia = requestBody?.content?.["application/json"];
  let requestExamples: { title: string; body: Json | undefined }[] = [{ title: "", body: undefined }];
  if (requestMedia) {
    const schema = resolveRef(document, requestMedia.schema) ?? {};
    const required = new Set<string>(schema.required ?? []);
    const schemaName = refName(requestMedia.schema);
    const fields = Object.entries<Node>(schema.properties ?? {});
    if (fields.length === 0 && !requestBody?.required) {
      // A body without fields (pause, resume): the request is made without one.
      lines.push("No request body (`{}` is accepted; any field is refused).", "");
    } else {
      lines.push(
        `Request body${schemaName ? ` (${schemaName})` : ""}, \`application/json\`${requestBody?.required ? "" : ", optional"}${schema.additionalProperties === false ? "; other fields are refused" : ""}:`,
        "",
        "| field | type | required | description | constraints |",
        "|---|---|---|---|---|",
      );
      for (const [field, fieldSchema] of fields) {
        const described = resolveRef(document, fieldSchema) ?? {};
        lines.push(
          `| ${code(field)} | ${cell(typeOf(document, fieldSchema))} | ${required.has(field) ? "yes" : "no"} | ${cell(described.description ?? "")} | ${cell(constraintsOf(document, fieldSchema))} |`,
        );
      }
      lines.push("");
      requestExamples = (op.operationId && REQUEST_EXAMPLES[op.operationId]) || [
        { title: "", body: exampleOf(document, requestMedia.schema, schemaName ?? "", "request") },
      ];
    }
  }

  for (const example of requestExamples) {
    lines.push(`Example request${example.title ? ` (${example.title.toLowerCase()})` : ""}:`, "");
    lines.push("```sh", curlOf(document, entry, parameters, example.body), "```", "");
  }

  const statuses = Object.keys(op.responses ?? {});
  const success = statuses.find((status) => /^2/.test(status));
  if (success) {
    const response = resolveRef(document, op.responses[success]) ?? {};
    const content: Node = response.content ?? {};
    const json = content["application/json"];
    let example: Json | undefined;
    if (json?.schema)
      example = json.example ?? exampleOf(document, json.schema, refName(json.schema) ?? "", "response");
    const overrides = op.operationId ? RESPONSE_FIELDS[op.operationId] : undefined;
    if (overrides && example && typeof example === "object" && !Array.isArray(example)) {
      for (const [field, value] of Object.entries(overrides)) if (field in example) example[field] = value;
    }
    // A schema that says only "an object" makes no useful example.
    const useful =
      example !== undefined && !(example && typeof example === "object" && Object.keys(example).length === 0);
    if (useful) {
      lines.push(`Example response, \`${success}\`:`, "", "```json", JSON.stringify(example, null, 2), "```", "");
    } else if (Object.keys(content).length > 0) {
      lines.push(`The \`${success}\` answer is ${Object.keys(content).map(code).join(" or ")}.`, "");
    } else {
      lines.push(`The \`${success}\` answer has no body.`, "");
    }
  }

  lines.push("| status | meaning | headers | messages |", "|---|---|---|---|");
  for (const status of statuses) {
    const response = resolveRef(document, op.responses[status]) ?? {};
    const messages = messagesOf(response);
    const headers = Object.keys(response.headers ?? {}).filter((header) => !RATE_LIMIT_HEADER.test(header));
    lines.push(
      `| ${status} | ${cell(prose(response.description, messages))} | ${headers.map(code).join(", ")} | ${messages.map((message) => cell(code(message))).join("<br>")} |`,
    );
  }
  lines.push("");
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorer(): (heading: string) => string {
  const used = new Map<string, number>();
  return (heading) => {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, "")
      .replace(/ /g, "-");
    const count = used.get(base) ?? 0;
    used.set(base, count + 1);
    return count === 0 ? base : `${base}-${count}`;
  };
}

/** docs/api.md for an OpenAPI document. */
export function renderApiDocs(document: Node): string {
  const operations: Operation[] = [];
  for (const [path, pathItem] of Object.entries<Node>(document.paths ?? {})) {
    // In the document's own order of methods.
    for (const method of Object.keys(pathItem)) {
      if ((METHODS as readonly string[]).includes(method)) operations.push({ method, path, op: pathItem[method] });
    }
  }
  const tags: Node[] = [...(document.tags ?? [])];
  const untagged = operations.filter((entry) => !tags.some((tag) => entry.op.tags?.includes(tag.name)));
  if (untagged.length > 0) tags.push({ name: "Other" });
  const inTag = (tag: Node) =>
    tag.name === "Other" && !(document.tags ?? []).some((known: Node) => known.name === "Other")
      ? untagged
      : operations.filter((entry) => entry.op.tags?.includes(tag.name));

  const anchor = anchorer();
  const schemes: Node = document.components?.securitySchemes ?? {};
  const headers: Node = document.components?.headers ?? {};
  const errorSchema = resolveRef(document, document.components?.schemas?.Error);
  const lines: string[] = [
    `# ${document.info?.title ?? "API"} reference`,
    "",
    `<!-- Generated from the OpenAPI document by scripts/api-docs.ts: edit that script or the document, then run \`node --import tsx scripts/api-docs.ts\`. -->`,
    "",
    `Version ${document.info?.version ?? "?"}, generated from the OpenAPI ${document.openapi} document that the API serves at \`/api/openapi.json\` (and as an interactive page at \`/docs\`), with the default settings: limits shown below (payload size, quotas, page size, rate limit) follow the deployment's configuration.`,
    "",
  ];
  if (document.info?.description) lines.push(document.info.description, "");
  lines.push(
    "What a delivery looks like when it reaches its destination, and how to verify its signatures, is in [receiving.md](receiving.md).",
    "",
  );

  lines.push("## Conventions", "");
  const servers: Node[] = document.servers ?? [];
  lines.push(
    `- **Base URL**: the address the API listens on (${servers.map((server) => code(server.url)).join(", ") || code("/")} in the document: paths are relative to that server), e.g. \`${BASE_URL}\` with the defaults. The examples read \`$API_KEY\` and \`$ADMIN_TOKEN\` from the shell.`,
  );
  for (const [name, scheme] of Object.entries<Node>(schemes)) {
    const how =
      scheme.type === "apiKey"
        ? `the ${code(scheme.name)} ${scheme.in}`
        : scheme.type === "http"
          ? `HTTP ${code(scheme.scheme)} authentication`
          : scheme.type;
    lines.push(`- **Auth \`${name}\`**: ${how}${scheme.description ? ` — ${scheme.description}` : ""}.`);
  }
  if (errorSchema) {
    const fields = Object.entries<Node>(errorSchema.properties ?? {})
      .map(([field, schema]) => `${code(field)} (${schema.description ?? typeOf(document, schema)})`)
      .join(", ");
    lines.push(
      `- **Errors** answer JSON ${code(JSON.stringify(Object.fromEntries(Object.keys(errorSchema.properties ?? {}).map((field) => [field, "…"]))))}: ${fields}. Each endpoint lists its statuses and their exact messages.`,
    );
  }
  lines.push(`- **Times** are ISO 8601 strings; answers give them in UTC with milliseconds (\`${EXAMPLE_TIME}\`).`);
  lines.push(`- ${CONTRACT_NOTE}`, "");
  const headerNames = Object.keys(headers);
  if (headerNames.length > 0) {
    lines.push("Response headers:", "", "| header | type | meaning |", "|---|---|---|");
    for (const name of headerNames) {
      const header = resolveRef(document, headers[name]) ?? {};
      lines.push(`| ${code(name)} | ${cell(typeOf(document, header.schema))} | ${cell(header.description ?? "")} |`);
    }
    lines.push(
      "",
      "`RateLimit-*` headers are on every answer the rate limiter counted; the tables below name only the other headers.",
      "",
    );
  }

  const eventItem: Node | undefined = document.paths?.["/api/events/{eventId}"];
  if (eventItem?.put && !eventItem.delete) {
    const summary: string | undefined = eventItem.put.summary;
    lines.push(
      `Events have no \`DELETE\`: a \`Pending\` event is cancelled by \`PUT /api/events/{eventId}\` with \`{"status":"Cancelled"}\`${summary ? ` (see [${summary}](#${anchorer()(summary)}))` : ""}.`,
      "",
    );
  }
  const listEvents = operations.find((entry) => entry.op.operationId === "getManyEvents");
  const pagesByCursor = parametersOf(document, document.paths[listEvents?.path ?? ""] ?? {}, listEvents?.op ?? {}).some(
    (parameter) => parameter.name === "cursor",
  );
  if (listEvents && pagesByCursor && headers["X-Next-Cursor"]) {
    lines.push(
      `Listing events page by page: each answer that has more after it carries \`X-Next-Cursor\`; send it back as \`cursor\` (with the same filters) until an answer comes without it.`,
      "",
      "```sh",
      'CURSOR=""',
      "while :; do",
      `  curl -s -D headers.txt "${BASE_URL}${listEvents.path}?status=Sent\${CURSOR:+&cursor=$CURSOR}" -H "x-api-key: $API_KEY" > page.json`,
      "  # … use page.json, a JSON array of events …",
      "  CURSOR=$(grep -i '^x-next-cursor:' headers.txt | cut -d' ' -f2 | tr -d '\\r')",
      '  [ -n "$CURSOR" ] || break',
      "done",
      "```",
      "",
    );
  }

  lines.push("## Endpoints", "");
  const body: string[] = [];
  for (const tag of tags) {
    const entries = inTag(tag);
    if (entries.length === 0) continue;
    const tagHeading = tag.name;
    lines.push(`- [${tag.name}](#${anchor(tagHeading)})`);
    body.push(`## ${tagHeading}`, "");
    if (tag.description) body.push(tag.description, "");
    for (const entry of entries) {
      const heading = entry.op.summary ?? `${entry.method.toUpperCase()} ${entry.path}`;
      lines.push(`  - [${code(`${entry.method.toUpperCase()} ${entry.path}`)}](#${anchor(heading)}) — ${heading}`);
      renderOperation(document, entry, body);
    }
  }
  lines.push("", ...body);
  return `${lines
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}

/** The document as a deployment with default settings serves it; the environment is ignored. */
export function defaultOpenApiDocument(): Node {
  return createOpenApiDocument(loadConfig({} as NodeJS.ProcessEnv)) as unknown as Node;
}

export const API_DOCS_PATH = resolve(import.meta.dirname, "../docs/api.md");

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const rendered = renderApiDocs(defaultOpenApiDocument());
  if (process.argv.includes("--check")) {
    const { readFileSync } = await import("node:fs");
    if (readFileSync(API_DOCS_PATH, "utf8") !== rendered) {
      console.error("docs/api.md is stale: run node --import tsx scripts/api-docs.ts");
      process.exit(1);
    }
  } else {
    writeFileSync(API_DOCS_PATH, rendered);
    console.log(`wrote ${API_DOCS_PATH}`);
  }
}
