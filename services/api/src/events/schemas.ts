import {
  BULK_REPLAYABLE,
  type BulkReplayableStatus,
  type Config,
  ConfigSchema,
  checkDestination,
  DAY_MS,
  DESTINATION_MAX_LENGTH,
  DESTINATION_NOT_HTTP_URL_MESSAGE,
  deliveryPolicyShape,
  EVENT_STATUSES,
  type EventStatus,
  FORBIDDEN_DESTINATION_MESSAGE,
  isEventStatus,
  literalHostAddress,
  refineRawPayload,
  refusedDestinationMessage,
} from "@punctual/core";
import { z } from "zod";
import { effectivePolicyShape } from "../delivery-policy/schemas.ts";
import { flowKeyAnswer, flowKeyEditField, flowKeyField } from "../flows/schemas.ts";
import { CallbackStateSchema, callbackUrlAnswer, callbackUrlEditField, callbackUrlField } from "../webhooks/schemas.ts";
import { labelFilters, labelsAnswer, labelsEditField, labelsField } from "./label-schemas.ts";

// Request and response schemas of the events API (contract §3). Limits that an operator can change
// (the payload size) and rules that depend on "now" (the scheduled time) are closed over by
// `eventRequestSchemas`; the exported `XxxSchema` constants are the same schemas built with the
// default limits, for documentation (OpenAPI) and for tests.

export const MAX_DESTINATION_LENGTH = DESTINATION_MAX_LENGTH;
export const MAX_SCHEDULE_AHEAD_DAYS = 365;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

export const VALID_TIME = "Please enter a valid time";
export const TIME_ZONE_REQUIRED =
  "'scheduledTime' must include a time zone, e.g. 2026-12-01T10:00:00Z or 2026-12-01T10:00:00+02:00";
export const TIME_IN_FUTURE = "Please make sure your scheduled time is in the future";
export const TIME_AT_MOST_AHEAD = `Please make sure your scheduled time is at most ${MAX_SCHEDULE_AHEAD_DAYS} days ahead`;
export const DESTINATION_URL = DESTINATION_NOT_HTTP_URL_MESSAGE;
export const AT_LEAST_ONE_CHANGE = "At least one of 'payload', 'destination', 'scheduledTime' or 'status' is required";
export const ONLY_CANCEL = "'status' can only be set to 'Cancelled'";
/** The payload size refusal at a deployment's limit (the words of `payloadSchema`). */
export const payloadTooLong = (config: Pick<Config, "MAX_PAYLOAD_BYTES">) =>
  `Payload must be at most ${config.MAX_PAYLOAD_BYTES} bytes`;
/** The quota refusal at a deployment's limit (the words of the events lifecycle). */
export const monthlyLimitReached = (config: Pick<Config, "MAX_EVENTS_PER_MONTH">) =>
  `Monthly limit of ${config.MAX_EVENTS_PER_MONTH} scheduled events reached for this organization`;

// ISO 8601 extended format with a zone: date, 'T', hh:mm[:ss[.fraction]], then Z or ±hh[:]mm / ±hh.
const ZONED_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

/** `Date.UTC` without its quirk of reading years 0–99 as 1900–1999. */
function utcTime(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

const daysInMonth = (year: number, month: number) => new Date(utcTime(year, month + 1, 0)).getUTCDate();

/**
 * Parses an ISO 8601 timestamp that names its zone (`Z` or an offset); a zone-less or impossible
 * one (Feb 31, 25:00), or one outside the UTC years 1–9999, gives undefined. Written out rather
 * than left to `Date.parse`, which accepts zone-less times as local time and rolls impossible dates
 * over.
 */
export function parseZonedTimestamp(text: string): Date | undefined {
  const match = ZONED_TIMESTAMP.exec(text);
  if (!match) return undefined;
  const [
    ,
    year,
    month,
    day,
    hour,
    minute,
    second = "0",
    fraction = "",
    zulu,
    sign,
    offsetHours = "0",
    offsetMinutes = "0",
  ] = match;
  const y = Number(year);
  const mo = Number(month);
  const d = Number(day);
  const h = Number(hour);
  const mi = Number(minute);
  const s = Number(second);
  const oh = Number(offsetHours);
  const om = Number(offsetMinutes);
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59 || oh > 23 || om > 59) {
    return undefined;
  }
  const ms = Number(fraction.padEnd(3, "0").slice(0, 3));
  const offsetMs = zulu ? 0 : (sign === "-" ? -1 : 1) * (oh * 60 + om) * 60_000;
  const utc = utcTime(y, mo, d, h, mi, s, ms) - offsetMs;
  const date = new Date(utc);
  // Postgres has no year 0 and ISO strings change form past 9999: both would fail in the query.
  const utcYear = date.getUTCFullYear();
  return Number.isNaN(date.getTime()) || utcYear < 1 || utcYear > 9999 ? undefined : date;
}

/** True for a valid date and time that only lacks its zone (`2026-12-01T10:00:00`). */
export function lacksTimeZone(text: string): boolean {
  return parseZonedTimestamp(text) === undefined && parseZonedTimestamp(`${text}Z`) !== undefined;
}

export interface EventRequestLimits {
  /** `MAX_PAYLOAD_BYTES`: the payload's size in UTF-8 bytes. */
  maxPayloadBytes: number;
  /** "Now", for the scheduled time's rules (the injected clock). */
  now: () => Date;
  /** `ALLOW_PRIVATE_DESTINATIONS`; when false (the default) a literal forbidden address is refused. */
  allowPrivateDestinations?: boolean | undefined;
}

/**
 * The `payload` field of events and cron jobs: a string of at most `maxPayloadBytes` UTF-8 bytes.
 * Shared with the cron jobs API so both answer with the same words.
 */
export function payloadSchema(maxPayloadBytes: number) {
  return (
    z
      .string()
      .refine((text) => Buffer.byteLength(text, "utf8") <= maxPayloadBytes, {
        message: `Payload must be at most ${maxPayloadBytes} bytes`,
        abort: true,
      })
      // A lone surrogate has no UTF-8 form and Postgres text cannot hold NUL: refuse both clearly.
      .refine((text) => !text.includes("\u0000") && !/\p{Cs}/u.test(text), {
        message: "Payload must be valid UTF-8 text without NUL characters",
      })
      .meta({ description: `Stringified payload, at most ${maxPayloadBytes} bytes as UTF-8` })
  );
}

/**
 * The `destination` field of events and cron jobs (shared with the cron jobs API). It is judged by
 * the worker's own `checkDestination`, so nothing is accepted here that would then fail at every
 * attempt. Unless private destinations are allowed, a host that is a literal loopback, private,
 * link-local or metadata address (`127.0.0.1`, `[::ffff:127.0.0.1]`, `169.254.169.254`, …) is
 * refused here already (contract §5); a name that resolves to one can only be refused when it is
 * delivered.
 */
export function destinationSchema(options: { allowPrivateDestinations?: boolean | undefined } = {}) {
  const allowPrivate = options.allowPrivateDestinations ?? false;
  return (
    z
      .string()
      .superRefine((text, ctx) => {
        const checked = checkDestination(text, allowPrivate);
        if (checked.ok) return;
        const message =
          checked.reason === FORBIDDEN_DESTINATION_MESSAGE
            ? refusedDestinationMessage(literalHostAddress(text) ?? new URL(text).hostname)
            : checked.reason;
        ctx.addIssue({ code: "custom", message });
      })
      // The length rule lives in checkDestination; this only documents it in the OpenAPI schema.
      .meta({
        format: "uri",
        maxLength: MAX_DESTINATION_LENGTH,
        description: "Absolute http or https URL the payload is POSTed to",
      })
  );
}

/** The delivery policy fields of a request body (contract §10.1), in the order they are documented. */
export const POLICY_FIELDS = ["method", "headers", "body", "timeoutMs", "retry"] as const;

/**
 * The policy fields of an edit (events and cron jobs): each as in a create, or null, which removes
 * the field from the stored policy (the deployment's default applies again).
 */
export const policyEditShape = {
  method: deliveryPolicyShape.method.nullable(),
  headers: deliveryPolicyShape.headers.nullable(),
  body: deliveryPolicyShape.body.nullable(),
  timeoutMs: deliveryPolicyShape.timeoutMs.nullable(),
  retry: deliveryPolicyShape.retry.nullable(),
};

/** The policy fields an edit gives (null included), and only those. */
export function policyEditOf(changes: Partial<Record<(typeof POLICY_FIELDS)[number], unknown>>) {
  const edit: Record<string, unknown> = {};
  for (const field of POLICY_FIELDS) if (changes[field] !== undefined) edit[field] = changes[field];
  return edit;
}

/** Whether an edit gives at least one policy field (null counts: it removes the field). */
export const hasPolicyEdit = (changes: Partial<Record<(typeof POLICY_FIELDS)[number], unknown>>) =>
  POLICY_FIELDS.some((field) => changes[field] !== undefined);

/** The request schemas of the events API for a deployment's limits and clock. */
export function eventRequestSchemas(limits: EventRequestLimits) {
  const payload = payloadSchema(limits.maxPayloadBytes);
  const destination = destinationSchema({ allowPrivateDestinations: limits.allowPrivateDestinations });

  const scheduledTime = z
    .string()
    .transform((text, ctx) => {
      const time = parseZonedTimestamp(text);
      if (!time) {
        ctx.addIssue({ code: "custom", message: lacksTimeZone(text) ? TIME_ZONE_REQUIRED : VALID_TIME });
        return z.NEVER;
      }
      const now = limits.now().getTime();
      if (time.getTime() <= now) {
        ctx.addIssue({ code: "custom", message: TIME_IN_FUTURE });
        return z.NEVER;
      }
      if (time.getTime() > now + MAX_SCHEDULE_AHEAD_DAYS * DAY_MS) {
        ctx.addIssue({ code: "custom", message: TIME_AT_MOST_AHEAD });
        return z.NEVER;
      }
      return time;
    })
    .meta({
      format: "date-time",
      description: `ISO 8601 time with a zone, in the future, at most ${MAX_SCHEDULE_AHEAD_DAYS} days ahead`,
    });

  const CreateEventSchema = z
    .strictObject({
      payload,
      destination,
      scheduledTime,
      ...deliveryPolicyShape,
      flowKey: flowKeyField.optional(),
      callbackUrl: callbackUrlField(limits.allowPrivateDestinations ?? false),
      labels: labelsField.optional(),
    })
    .superRefine(refineRawPayload);

  const UpdateEventSchema = z
    .strictObject({
      payload: payload.optional(),
      destination: destination.optional(),
      scheduledTime: scheduledTime.optional(),
      status: z.literal("Cancelled", { error: ONLY_CANCEL }).optional(),
      ...policyEditShape,
      flowKey: flowKeyEditField,
      callbackUrl: callbackUrlEditField(limits.allowPrivateDestinations ?? false),
      labels: labelsEditField,
    })
    .refine(
      (changes) =>
        changes.payload !== undefined ||
        changes.destination !== undefined ||
        changes.scheduledTime !== undefined ||
        changes.status !== undefined ||
        changes.flowKey !== undefined ||
        changes.callbackUrl !== undefined ||
        changes.labels !== undefined ||
        hasPolicyEdit(changes),
      { message: AT_LEAST_ONE_CHANGE },
    );

  // Replay: the time alone can be chosen (now when absent); payload and destination are the original's.
  const ReplayEventSchema = z.strictObject({
    scheduledTime: scheduledTime.optional().meta({
      description: `When the replay is due: ISO 8601 time with a zone, in the future, at most ${MAX_SCHEDULE_AHEAD_DAYS} days ahead; now when absent`,
    }),
  });

  // A test delivery goes now, so there is no time to give.
  const TestDeliverySchema = z
    .strictObject({
      destination,
      payload: payload.optional().meta({ description: "Stringified payload; `{}` when absent" }),
      ...deliveryPolicyShape,
    })
    .superRefine(refineRawPayload);

  return { CreateEventSchema, UpdateEventSchema, ReplayEventSchema, TestDeliverySchema };
}

const defaults = ConfigSchema.parse({});
const documented = eventRequestSchemas({ maxPayloadBytes: defaults.MAX_PAYLOAD_BYTES, now: () => new Date() });

// Only these documented copies carry registry ids: every app builds its own schemas, and ids must
// stay unique in zod's global registry.

/** POST /api/events body (default limits). */
export const CreateEventSchema = documented.CreateEventSchema.meta({
  id: "CreateEventRequest",
  description: "POST /api/events",
});
export type CreateEvent = z.output<typeof CreateEventSchema>;

/** PUT /api/events/:eventId body (default limits). */
export const UpdateEventSchema = documented.UpdateEventSchema.meta({
  id: "UpdateEventRequest",
  description: "PUT /api/events/:eventId; at least one field",
});
export type UpdateEvent = z.output<typeof UpdateEventSchema>;

/** POST /api/events/:eventId/replay body (default limits); optional as a whole. */
export const ReplayEventSchema = documented.ReplayEventSchema.meta({
  id: "ReplayEventRequest",
  description: "POST /api/events/:eventId/replay; the body may be left out",
});

/** POST /api/events/test body (default limits). */
export const TestDeliverySchema = documented.TestDeliverySchema.meta({
  id: "TestDeliveryRequest",
  description: "POST /api/events/test",
});

/** An opaque pagination cursor: the (scheduledTime, id) of the last event of the previous page. */
export interface ListCursor {
  scheduledTime: Date;
  id: string;
}

export const INVALID_CURSOR = "Invalid cursor";

export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify([cursor.scheduledTime.toISOString(), cursor.id]), "utf8").toString("base64url");
}

/**
 * The cursor `encodeCursor` made, or undefined for anything else. A cursor is the client's to send
 * back, so it is judged as any parameter is: its time by the rules of the date parameters (years 1
 * to 9999: a time that JavaScript can hold but Postgres cannot, such as +275760-09-13, would fail
 * the query), in the exact form `encodeCursor` writes.
 */
export function decodeCursor(text: string): ListCursor | undefined {
  if (text.length === 0 || text.length > 512 || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(decoded) || decoded.length !== 2) return undefined;
  const [time, id] = decoded as unknown[];
  if (typeof time !== "string" || typeof id !== "string" || id.length === 0 || id.length > 100) return undefined;
  // Postgres text cannot hold NUL, nor a lone UTF-16 surrogate (JSON's "\ud800" decodes to one).
  if (id.includes("\u0000") || /\p{Cs}/u.test(id)) return undefined;
  const scheduledTime = parseZonedTimestamp(time);
  if (!scheduledTime || scheduledTime.toISOString() !== time) return undefined;
  return { scheduledTime, id };
}

/** Largest `limit` a client may ask for; the answer is also capped by `MAX_LIST_RESULTS`. */
export const MAX_LIST_LIMIT = 1000;

const queryDate = (param: string) =>
  z
    .string()
    .transform((text, ctx) => {
      const date = parseZonedTimestamp(text);
      if (!date) {
        ctx.addIssue({ code: "custom", message: `Invalid date: ${param}` });
        return z.NEVER;
      }
      return date;
    })
    .optional()
    .meta({ format: "date-time" });

/** Parses `status`: one status or a comma-separated list of them (what `@jiter/node` sends). */
const statusList = z
  .string()
  .transform((text, ctx) => {
    const statuses: EventStatus[] = [];
    for (const part of text.split(",")) {
      const status = part.trim();
      if (status === "") {
        ctx.addIssue({ code: "custom", message: "'status' must not be empty" });
        return z.NEVER;
      }
      if (!isEventStatus(status)) {
        ctx.addIssue({ code: "custom", message: `Invalid status: ${status}` });
        return z.NEVER;
      }
      if (!statuses.includes(status)) statuses.push(status);
    }
    return statuses;
  })
  .optional()
  .meta({ description: `One of ${EVENT_STATUSES.map((s) => `'${s}'`).join(", ")}, or a comma-separated list of them` });

/**
 * The filters of GET /api/events, shared with POST /api/events/cancel: status, the time bounds
 * (start inclusive, end exclusive), the flow and the labels (contract §10.5).
 */
export const eventFilterShape = {
  status: statusList,
  scheduledStartDate: queryDate("scheduledStartDate"),
  scheduledEndDate: queryDate("scheduledEndDate"),
  sentAtStartDate: queryDate("sentAtStartDate"),
  sentAtEndDate: queryDate("sentAtEndDate"),
  failedAtStartDate: queryDate("failedAtStartDate"),
  failedAtEndDate: queryDate("failedAtEndDate"),
  flowKey: flowKeyField.optional().meta({ description: "Only events of this flow (contract §10.2)" }),
  label: labelFilters,
};

/** GET /api/events query: start bounds inclusive, end bounds exclusive. */
export const LIST_ORDER_ONE_OF = "order must be 'asc' or 'desc'";

export function listEventsQuerySchema(maxLimit: number) {
  const limitMessage = `limit must be an integer between 1 and ${maxLimit}`;
  return z.strictObject({
    ...eventFilterShape,
    limit: z
      .string()
      .regex(/^[0-9]{1,7}$/, limitMessage)
      .transform(Number)
      .refine((n) => n >= 1 && n <= maxLimit, { message: limitMessage })
      .optional(),
    cursor: z
      .string()
      .transform((text, ctx) => {
        const cursor = decodeCursor(text);
        if (!cursor) {
          ctx.addIssue({ code: "custom", message: INVALID_CURSOR });
          return z.NEVER;
        }
        return cursor;
      })
      .optional()
      .meta({ description: "The X-Next-Cursor header of the previous page" }),
    order: z
      .enum(["asc", "desc"], { error: LIST_ORDER_ONE_OF })
      .optional()
      .meta({ description: "`asc` (the default): oldest `scheduledTime` first; `desc`: newest first" }),
  });
}

export const ListEventsQuerySchema = listEventsQuerySchema(MAX_LIST_LIMIT).meta({ id: "ListEventsQuery" });
export type ListEventsQuery = z.output<typeof ListEventsQuerySchema>;

/** The event record of every response (contract §3). */
export const EventSchema = z
  .object({
    id: z.string(),
    scheduledTime: z.string().meta({ format: "date-time" }),
    destination: z.string(),
    org: z.string(),
    status: z.enum(EVENT_STATUSES),
    payload: z.string(),
    createdAt: z.string().meta({ format: "date-time" }),
    updatedAt: z.string().meta({ format: "date-time" }),
    sentAt: z.string().meta({ format: "date-time" }).optional(),
    failedAt: z.string().meta({ format: "date-time" }).optional(),
    replayOf: z
      .string()
      .nullable()
      .meta({ description: "The event this one replays (`evt_…`); null when not a replay" }),
    flowKey: flowKeyAnswer,
    callbackUrl: callbackUrlAnswer,
    labels: labelsAnswer,
    ...effectivePolicyShape,
  })
  .meta({ id: "Event" });

/** One delivery attempt in `history`; `responseStatus` is null on a network error, `error` null on success. */
export const EventAttemptSchema = z
  .object({
    attempt: z.number().int(),
    at: z.string().meta({ format: "date-time" }),
    responseStatus: z.number().int().nullable(),
    responseBody: z.string().nullable().meta({
      description:
        "The first 1024 bytes of the response body, as UTF-8; null when no response arrived (or for an attempt recorded before the body was kept)",
    }),
    durationMs: z.number().int(),
    error: z.string().nullable(),
  })
  .meta({ id: "EventAttempt" });

export const EventWithHistorySchema = EventSchema.extend({
  history: z.array(EventAttemptSchema),
  callback: CallbackStateSchema.optional().meta({
    description: "The callback of its final outcome, once written (an event with a `callbackUrl` that has ended)",
  }),
}).meta({
  id: "EventWithHistory",
});
export type EventWithHistory = z.infer<typeof EventWithHistorySchema>;

export const BULK_REPLAY_STATUS =
  "'status' must be 'Failed To Send' or 'Failed To Queue' (or both, separated by a comma)";

/** The statuses a bulk replay may select, as `status` is written in GET /api/events. */
const bulkReplayStatuses = z
  .string()
  .transform((text, ctx) => {
    const statuses: BulkReplayableStatus[] = [];
    for (const part of text.split(",")) {
      const status = part.trim();
      const replayable = BULK_REPLAYABLE.find((candidate) => candidate === status);
      if (!replayable) {
        ctx.addIssue({ code: "custom", message: BULK_REPLAY_STATUS });
        return z.NEVER;
      }
      if (!statuses.includes(replayable)) statuses.push(replayable);
    }
    return statuses;
  })
  .meta({ description: "'Failed To Send', 'Failed To Queue', or both separated by a comma" });

/** POST /api/events/replay body: the list filters of GET /api/events, `status` required. */
export const bulkReplaySchema = () =>
  z.strictObject({
    status: bulkReplayStatuses,
    scheduledStartDate: queryDate("scheduledStartDate").meta({ description: "`scheduledTime` at or after this time" }),
    scheduledEndDate: queryDate("scheduledEndDate").meta({ description: "`scheduledTime` before this time" }),
    sentAtStartDate: queryDate("sentAtStartDate").meta({ description: "`sentAt` at or after this time" }),
    sentAtEndDate: queryDate("sentAtEndDate").meta({ description: "`sentAt` before this time" }),
    failedAtStartDate: queryDate("failedAtStartDate").meta({
      description: "`failedAt` at or after this time; within the search window, not in the future",
    }),
    failedAtEndDate: queryDate("failedAtEndDate").meta({ description: "`failedAt` before this time" }),
  });

export const BulkReplaySchema = bulkReplaySchema().meta({
  id: "BulkReplayRequest",
  description: "POST /api/events/replay: which failed events to replay",
});

/** The answer of a bulk replay: the new events' ids, in the order of their originals. */
export const BulkReplayResultSchema = z
  .object({
    replayed: z.number().int(),
    events: z.array(z.string()).meta({ description: "Ids of the new events, oldest original first" }),
  })
  .meta({ id: "BulkReplayResult" });
export type BulkReplayResult = z.infer<typeof BulkReplayResultSchema>;

/** The answer of a test delivery: what the receiver did with it. */
export const TestDeliveryResultSchema = z
  .object({
    responseStatus: z.number().int().nullable().meta({ description: "The receiver's status; null when none came" }),
    durationMs: z.number().int(),
    responseBody: z
      .string()
      .nullable()
      .meta({ description: "The first 1024 bytes of the receiver's answer; null when none came" }),
    error: z.string().nullable().meta({ description: "Why the delivery would count as failed; null for a 2xx" }),
  })
  .meta({ id: "TestDeliveryResult" });
export type TestDeliveryResult = z.infer<typeof TestDeliveryResultSchema>;
