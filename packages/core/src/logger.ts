import { type DestinationStream, type Logger, pino } from "pino";
import pinoPretty from "pino-pretty";
import type { Config } from "./config.ts";

export type { Logger };

/** The longest a log line waits in the buffer before it is written. */
const FLUSH_INTERVAL_MS = 200;

/**
 * JSON logs on stdout; secrets never appear (API keys and auth headers are redacted), and an error
 * is logged by `serializeError`, without the data a failed statement carried. `destination`
 * replaces stdout (a test reading the lines).
 */
export function createLogger(
  config: Pick<Config, "LOG_LEVEL"> & Partial<Pick<Config, "LOG_FORMAT">>,
  name: string,
  destination: DestinationStream = logFormat(config.LOG_FORMAT ?? "auto", process.stdout.isTTY === true) === "pretty"
    ? prettyStdout()
    : bufferedStdout(),
): Logger {
  return pino(
    {
      name,
      level: config.LOG_LEVEL,
      redact: ["req.headers['x-api-key']", "req.headers.authorization", "apiKey", "signingSecret"],
      // `error` too: an error logged under that name would otherwise be written with all its fields.
      serializers: { err: serializeError, error: serializeError },
    },
    destination,
  );
}

/**
 * How lines are written: `auto` is one line of text per entry for a person at a terminal (`pnpm
 * start` in a shell), and JSON whenever stdout is a pipe or a file (a container's log, a collector).
 */
export function logFormat(setting: Config["LOG_FORMAT"], stdoutIsTerminal: boolean): "json" | "pretty" {
  if (setting !== "auto") return setting;
  return stdoutIsTerminal ? "pretty" : "json";
}

/** Lines as text (time, level, message, then the fields), written at once: a terminal shows them as they come. */
function prettyStdout(): DestinationStream {
  return pinoPretty({ translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", sync: true });
}

function bufferedStdout(): DestinationStream {
  // Lines gathered into writes of 4 KB or more: a burst of deliveries writes one line each, and a
  // write per line competes with the sends. What is gathered is written at least every 200 ms, and
  // when the process exits.
  const destination = pino.destination({ dest: 1, minLength: 4096, sync: false });
  setInterval(() => {
    try {
      destination.flush();
    } catch {
      // Closed at exit: nothing left to write.
    }
  }, FLUSH_INTERVAL_MS).unref();
  return destination;
}

// ---------------------------------------------------------------------------------------------
// Errors in logs
//
// pino's own error serializer writes every field of an error. A database error's fields hold the
// statement it failed on and that statement's parameters (payloads, destinations, ids, secrets):
// Prisma puts the query and its values into the message of a validation error and the driver's
// error into `meta` (with Postgres' `detail`, e.g. "Failing row contains (…)"); node-postgres
// errors carry `detail`, `where` and `internalQuery`; an ioredis error carries the command's
// arguments. So an error is logged by what it is and where: its type, its message without the data
// (below), known fields that name a kind, a code or a place, its stack frames and its causes.

/** Fields kept as they are when they hold a string, number or boolean: kinds, codes and places. */
const PLAIN_FIELDS = [
  "code",
  "errno",
  "syscall",
  "address",
  "port",
  "status",
  "statusCode",
  "kind",
  "severity",
  "schema",
  "table",
  "column",
  "dataType",
  "routine",
  "clientVersion",
  "modelName",
] as const;

/** How deep causes (and causes of causes) are followed. */
const MAX_CAUSE_DEPTH = 3;
/** How many of an AggregateError's errors are logged. */
const MAX_AGGREGATED = 5;

type Logged = Record<string, unknown>;

/**
 * Postgres quotes the value it could not take in its message (`invalid input syntax for type
 * integer: "…"`, `date/time field value out of range: "…"`, `value "…" is out of range`) and names
 * in the same quotes (`relation "events"`, `constraint "events_pkey"`). Quoted text after one of
 * these words is a name and kept. Any other quote opens a value, which may hold quotes itself: from
 * there to the message's last quote is replaced. So are bytes (`invalid byte sequence for encoding
 * "UTF8": 0x00`).
 */
const NAMING_WORDS =
  /(?:relation|table|column|constraint|index|database|schema|role|user|type|encoding|function|sequence|view|trigger|operator|extension|collation|cursor|statement|savepoint|portal|channel|tablespace|domain)\s*$/i;

export function withoutValues(text: string): string {
  let kept = "";
  let from = 0;
  while (from < text.length) {
    const open = text.indexOf('"', from);
    if (open === -1) {
      kept += text.slice(from);
      break;
    }
    const close = text.indexOf('"', open + 1);
    if (close !== -1 && NAMING_WORDS.test(text.slice(Math.max(0, open - 24), open))) {
      kept += text.slice(from, close + 1);
      from = close + 1;
      continue;
    }
    const last = text.lastIndexOf('"');
    kept += `${text.slice(from, open)}"…"`;
    from = last > open ? last + 1 : text.length;
  }
  return kept.replace(/0x[0-9a-f]{2}(?:\s*0x[0-9a-f]{2})*/gi, "0x…");
}

/** True for an error of Prisma's client or of its driver adapter, or one of node-postgres. */
function isDatabaseError(error: Logged, type: string): boolean {
  return (
    type.startsWith("PrismaClient") ||
    type === "DriverAdapterError" ||
    type === "DatabaseError" ||
    (typeof error.severity === "string" && typeof error.routine === "string")
  );
}

/**
 * A message fit for a log. Prisma's messages of a failed call render the call: its query and
 * parameters, or the arguments of a model query, between a first line (`Invalid
 * \`prisma.$queryRaw()\` invocation:`) and a last paragraph that says what went wrong. Only those
 * two are kept. The message of a database error loses the values Postgres quoted in it.
 */
function loggedMessage(message: string, database: boolean): string {
  if (!database) return message;
  const trimmed = message.trim();
  const invocation = /^Invalid `[^`]*` invocation/.exec(trimmed);
  if (invocation) {
    const paragraphs = trimmed.split(/\n\s*\n/);
    const last = paragraphs.length > 1 ? (paragraphs.at(-1) ?? "").trim() : "";
    return withoutValues(last === "" ? `${invocation[0]}` : `${invocation[0]}: ${last}`);
  }
  return withoutValues(trimmed);
}

/** A constraint as the driver adapter reports it: its index, or the fields of its key. */
function constraintName(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return undefined;
  const { index, fields } = value as { index?: unknown; fields?: unknown };
  if (typeof index === "string") return index;
  if (Array.isArray(fields) && fields.every((field) => typeof field === "string")) return fields.join(", ");
  return undefined;
}

/** The driver's error under a Prisma error (`meta.driverAdapterError`) or a DriverAdapterError. */
function driverCause(error: Logged): Logged | undefined {
  const meta = error.meta as { driverAdapterError?: { cause?: unknown } } | undefined;
  const cause = meta?.driverAdapterError?.cause ?? (error.name === "DriverAdapterError" ? error.cause : undefined);
  return typeof cause === "object" && cause !== null ? (cause as Logged) : undefined;
}

/** What the driver said, by the same rules: kind, SQLSTATE, severity, names and its message. */
function driverDetails(cause: Logged): Logged {
  const logged: Logged = {};
  for (const field of PLAIN_FIELDS) {
    const value = cause[field];
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") logged[field] = value;
  }
  if (typeof cause.originalCode === "string") logged.code = cause.originalCode;
  const constraint = constraintName(cause.constraint);
  if (constraint !== undefined) logged.constraint = constraint;
  const message = cause.originalMessage ?? cause.message ?? cause.cause ?? cause.reason;
  if (typeof message === "string") logged.message = withoutValues(message);
  return logged;
}

/**
 * The `err` of a log line: an error described by its type, message, codes, stack frames and
 * causes, without what a failed statement or command carried (see above). Anything that is not an
 * object is logged as it is.
 */
export function serializeError(error: unknown, depth = 0): unknown {
  if (typeof error !== "object" || error === null) return error;
  const fields = error as Logged;
  const type =
    error instanceof Error
      ? error.constructor?.name || error.name
      : typeof fields.name === "string"
        ? fields.name
        : "Object";
  const database = isDatabaseError(fields, type);
  const logged: Logged = { type };
  if (typeof fields.message === "string") logged.message = loggedMessage(fields.message, database);
  for (const field of PLAIN_FIELDS) {
    const value = fields[field];
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") logged[field] = value;
  }
  const constraint = constraintName(fields.constraint);
  if (constraint !== undefined) logged.constraint = constraint;
  const meta = fields.meta as { modelName?: unknown; target?: unknown } | undefined;
  if (typeof meta?.modelName === "string") logged.modelName = meta.modelName;
  // A unique constraint's fields or index (P2002).
  const target = meta?.target;
  if (typeof target === "string") logged.target = target;
  else if (Array.isArray(target) && target.every((field) => typeof field === "string"))
    logged.target = target.join(", ");
  // ioredis: the command's name, never its arguments (keys and values).
  const command = fields.command as { name?: unknown } | undefined;
  if (typeof command?.name === "string") logged.command = command.name;
  const driver = database ? driverCause(fields) : undefined;
  if (driver) logged.db = driverDetails(driver);
  if (typeof fields.stack === "string") {
    const frames = fields.stack.split("\n").filter((line) => /^\s+at /.test(line));
    logged.stack = [`${type}: ${logged.message ?? ""}`, ...frames].join("\n");
  }
  if (depth < MAX_CAUSE_DEPTH) {
    // A DriverAdapterError's cause is the driver's error, logged above as `db`.
    if (fields.cause !== undefined && !(driver && fields.cause === driver)) {
      logged.cause = serializeError(fields.cause, depth + 1);
    }
    if (Array.isArray(fields.errors)) {
      logged.errors = fields.errors.slice(0, MAX_AGGREGATED).map((inner) => serializeError(inner, depth + 1));
    }
  }
  return logged;
}
