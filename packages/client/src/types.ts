import type { components, operations } from "./generated/openapi.ts";
import type { Instant } from "./http.ts";

// Names for the generated types, so that callers never spell `components["schemas"][…]`. Every one
// is derived from the generated file: when the API's document changes, these change with it.

type Schemas = components["schemas"];

export type Event = Schemas["Event"];
export type EventWithHistory = Schemas["EventWithHistory"];
export type EventAttempt = Schemas["EventAttempt"];
export type EventStatus = Event["status"];
export type BulkReplayResult = Schemas["BulkReplayResult"];
export type TestDeliveryResult = Schemas["TestDeliveryResult"];
export type CronJob = Schemas["CronJob"];
export type CronJobWithHistory = Schemas["CronJobWithHistory"];
export type CronRun = Schemas["CronRun"];
export type Account = Schemas["Account"];
export type CreatedOrganization = Schemas["CreatedOrganization"];
export type Organization = Schemas["Organization"];
export type Member = Schemas["Member"];
export type Membership = Schemas["Membership"];
export type CreatedApiKey = Schemas["CreatedApiKey"];
export type RotatedApiKey = Schemas["RotatedApiKey"];
export type ApiKey = Schemas["ApiKey"];
export type RevokedApiKey = Schemas["RevokedApiKey"];
export type RotatedSigningSecret = Schemas["RotatedSigningSecret"];
export type EndedSigningSecretOverlap = Schemas["EndedSigningSecretOverlap"];
export type ServiceHealth = Schemas["ServiceHealth"];
export type ErrorBody = Schemas["Error"];
/** Delivery policy fields as a request sets them, and the organization's default as stored (contract §10.1). */
export type DeliveryPolicy = Schemas["DeliveryPolicy"];
/** The policy a record's deliveries use: every field filled, sensitive header values redacted. */
export type EffectiveDeliveryPolicy = Schemas["EffectiveDeliveryPolicy"];
export type EffectiveRetry = Schemas["EffectiveRetry"];
/** A flow's limits and pause (contract §10.2), as PUT, pause and resume answer it. */
export type Flow = Schemas["Flow"];
/** A flow with what the workers hold back for it now (GET /api/flows and /api/flows/{flowKey}). */
export type FlowWithCounts = Schemas["FlowWithCounts"];
/** PUT /api/flows/{flowKey}: the limits, replaced as a whole. */
export type SetFlowRequest = Schemas["SetFlowRequest"];
/** An origin's health (contract §10.3) and what waits for it. */
export type Destination = Schemas["Destination"];

/** The JSON body of an operation's 200 answer. */
type Ok<Operation extends keyof operations> = operations[Operation]["responses"] extends {
  200: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

export type Stats = Ok<"getStats">;
export type CronPreview = Ok<"previewCronJob">;

/** An operation's query parameters as the document declares them (every value a string). */
export type RawQuery<Operation extends keyof operations> = NonNullable<operations[Operation]["parameters"]["query"]>;

/** Fields that name a moment (`…Time`, `…Date`, `from`, `to`) also take a Date. */
type MomentName = `${string}Time` | `${string}Date` | "from" | "to";

/** A request body or query with Dates allowed for its moments. */
export type WithDates<T> = { [K in keyof T]: K extends MomentName ? T[K] | Date : T[K] };

export type CreateEventRequest = WithDates<Schemas["CreateEventRequest"]>;
export type UpdateEventRequest = WithDates<Omit<Schemas["UpdateEventRequest"], "status">>;
export type ReplayEventRequest = WithDates<Schemas["ReplayEventRequest"]>;
type FailedStatus = Extract<EventStatus, "Failed To Send" | "Failed To Queue">;
/** Which failed events a bulk replay takes: one failed status or both, and the document's filters. */
export type BulkReplayRequest = WithDates<Omit<Schemas["BulkReplayRequest"], "status">> & {
  status: FailedStatus | readonly FailedStatus[];
};
export type TestDeliveryRequest = Schemas["TestDeliveryRequest"];
export type CreateCronJobRequest = Schemas["CreateCronJobRequest"];
export type UpdateCronJobRequest = Schemas["UpdateCronJobRequest"];
export type CreateAccountRequest = Schemas["CreateAccountRequest"];
export type CreateOrganizationRequest = Schemas["CreateOrganizationRequest"];
export type AddMemberRequest = Schemas["AddMemberRequest"];
export type RotateSigningSecretRequest = Schemas["RotateSigningSecretRequest"];

/** `GET /api/events` filters: one status or several, moments as Dates or strings, `limit` a number. */
export type ListEventsQuery = {
  [K in keyof RawQuery<"getManyEvents">]?: K extends "status"
    ? EventStatus | readonly EventStatus[]
    : K extends "limit"
      ? number
      : K extends MomentName
        ? Instant
        : RawQuery<"getManyEvents">[K];
};

/** `GET /api/stats`: the window (moments as Dates or strings) and the bucket size. */
export type StatsQuery = WithDates<RawQuery<"getStats">>;

/** `GET /api/cron-jobs/preview`: `count` as a number. */
export type CronPreviewQuery = Omit<RawQuery<"previewCronJob">, "count"> & { count?: number };

/** One page of `GET /api/events`, and the cursor of the next one (null on the last page). */
export interface EventPage {
  events: Event[];
  nextCursor: string | null;
}
