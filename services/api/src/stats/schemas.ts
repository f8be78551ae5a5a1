import { DAY_MS } from "@punctual/core";
import { z } from "zod";
import { parseZonedTimestamp } from "../events/schemas.ts";

// The query and answer of GET /api/stats, the console overview's figures.

export const STATS_BUCKETS = ["hour", "day"] as const;
export type StatsBucket = (typeof STATS_BUCKETS)[number];

/** The length of each bucket; buckets start on UTC hours and UTC midnights. */
export const BUCKET_MS: Record<StatsBucket, number> = { hour: 60 * 60 * 1000, day: DAY_MS };

/** The window when neither bound is given: the last 24 hours. */
export const DEFAULT_WINDOW_MS = DAY_MS;
/** The longest window a request may ask for. */
export const MAX_WINDOW_DAYS = 31;

export const BUCKET_ONE_OF = `'bucket' must be one of ${STATS_BUCKETS.map((b) => `'${b}'`).join(" or ")}`;
export const FROM_BEFORE_TO = "'from' must be before 'to'";
export const WINDOW_TOO_LONG = `The window from 'from' to 'to' must be at most ${MAX_WINDOW_DAYS} days`;
/** The earliest time a bound can name: the first instant of year 1, as for every date parameter. */
export const EARLIEST_BOUND = new Date("0001-01-01T00:00:00.000Z");
/** A `to` so early that the default `from` before it would fall before year 1. */
export const FROM_REQUIRED = `'from' is required when 'to' is less than ${DEFAULT_WINDOW_MS / 3_600_000} hours after ${EARLIEST_BOUND.toISOString().replace(".000", "")}`;
/** A bound that is not an ISO 8601 time with a zone (the words of GET /api/events). */
export const invalidDate = (param: "from" | "to") => `Invalid date: ${param}`;

const bound = (param: "from" | "to", description: string) =>
  z
    .string()
    .transform((text, ctx) => {
      const date = parseZonedTimestamp(text);
      if (!date) {
        ctx.addIssue({ code: "custom", message: invalidDate(param) });
        return z.NEVER;
      }
      return date;
    })
    .optional()
    .meta({ format: "date-time", description });

/** GET /api/stats query; the window's rules (order, length) are checked once both bounds are known. */
export const StatsQuerySchema = z.strictObject({
  from: bound("from", "Start of the window (inclusive), ISO 8601 with a zone; default: 24 hours before `to`"),
  to: bound("to", "End of the window (exclusive), ISO 8601 with a zone; default: now"),
  bucket: z
    .enum(STATS_BUCKETS, { error: BUCKET_ONE_OF })
    .optional()
    .meta({ description: "Bucket size: UTC hours (default) or UTC days" }),
});

const count = () => z.number().int();
const timestamp = () => z.string().meta({ format: "date-time" });

export const StatsBucketSchema = z.strictObject({
  start: timestamp().meta({ description: "Start of the UTC hour or day" }),
  sent: count().meta({ description: "Events and cron runs whose delivery succeeded in the bucket" }),
  failed: count().meta({ description: "Events and cron runs that ended failed in the bucket" }),
  retried: count().meta({ description: "Failed attempts in the bucket that were followed by another attempt" }),
  latenessMs: z.strictObject({ p50: z.number().nullable(), p99: z.number().nullable() }).meta({
    description: "Lateness of the first attempts made in the bucket (attempt time - scheduledTime); null without any",
  }),
});

/** The answer of GET /api/stats. */
export const StatsSchema = z.strictObject({
  from: timestamp(),
  to: timestamp(),
  bucket: z.enum(STATS_BUCKETS),
  buckets: z.array(StatsBucketSchema).meta({ description: "Every bucket of the window, oldest first" }),
  totals: z.strictObject({ sent: count(), failed: count(), retried: count() }),
  usage: z.strictObject({
    month: z.string().meta({ description: "The current UTC month, `YYYY-MM`" }),
    used: count().meta({ description: "Events scheduled in that month" }),
    limit: count().meta({ description: "`MAX_EVENTS_PER_MONTH`" }),
  }),
  failingDestinations: z
    .array(
      z.strictObject({
        destination: z.string(),
        failures: count().meta({ description: "Failed attempts to it in the window" }),
        lastError: z.string().nullable().meta({ description: "The error of the latest of them" }),
      }),
    )
    .meta({ description: "At most 5, most failures first" }),
});
export type Stats = z.infer<typeof StatsSchema>;
