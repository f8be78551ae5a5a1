// The API's records as the console reads them: each one is a type of @punctual/client, which derives
// them from the OpenAPI document that the API's schemas generate (pnpm client:generate), so that a
// change of an API schema reaches the console's typecheck. Types only: nothing of the client is
// bundled into the console (its calls go through ./client.ts; types.test.ts checks the bundle).
import type {
  CronJob,
  CronPreview,
  components,
  EffectiveDeliveryPolicy,
  EventAttempt,
  Event as EventRecord,
  EventStatus,
  EventWithHistory,
  UpdateCronJobRequest,
} from "@punctual/client";

export type {
  ApiKey,
  CreateCronJobRequest,
  CreatedApiKey,
  CreatedOrganization,
  CronJob,
  CronJobWithHistory,
  CronPreview,
  CronPreviewQuery,
  CronRun,
  DeliveryPolicy,
  Destination,
  EffectiveDeliveryPolicy,
  EffectiveRetry,
  EventStatus,
  Flow,
  FlowWithCounts,
  Membership,
  Organization,
  RotatedApiKey,
  RotatedSigningSecret,
  ServiceHealth,
  SetFlowRequest,
  Stats,
  TestDeliveryResult,
  UpdateCronJobRequest,
} from "@punctual/client";

/** An event as GET /api/events lists it and as PUT /api/events/{id} and the replays answer (not the DOM's Event). */
export type DeliveryEvent = EventRecord;
/** An event as GET /api/events/{id} answers: with its delivery attempts. */
export type DeliveryEventWithHistory = EventWithHistory;
export type Attempt = EventAttempt;
/** The signed-in session (GET /console/api/session and the sign-in answers): the console's own route, which the client has no name for. */
export type Session = components["schemas"]["ConsoleSession"];

/** What POST /api/events/test takes: a destination, a payload and the delivery policy fields to try. */
export type TestDeliveryRequest = components["schemas"]["TestDeliveryRequest"];
export type DeliveryMethod = EffectiveDeliveryPolicy["method"];
export type BodyMode = EffectiveDeliveryPolicy["body"];

/** Every method, in the order the method selects offer them: a method the API adds or drops fails the typecheck here. */
const METHOD_ORDER: { [Method in DeliveryMethod]: true } = {
  POST: true,
  PUT: true,
  PATCH: true,
  GET: true,
  DELETE: true,
};

export const DELIVERY_METHODS: readonly DeliveryMethod[] = Object.keys(METHOD_ORDER) as DeliveryMethod[];

/** Every status, in the order the status filter offers them: a status the API adds or drops fails the typecheck here. */
const IN_FILTER_ORDER: { [Status in EventStatus]: true } = {
  Pending: true,
  Queued: true,
  Sent: true,
  "Failed To Send": true,
  "Failed To Queue": true,
  Cancelled: true,
};

export const EVENT_STATUSES: readonly EventStatus[] = Object.keys(IN_FILTER_ORDER) as EventStatus[];

/** The statuses a whole filter of events can be replayed from (POST /api/events/replay). */
export const REPLAYABLE_FAILURES: readonly EventStatus[] = ["Failed To Send", "Failed To Queue"];

/** The callback of a delivery's final outcome, on an event's record and a cron run's. */
export type CallbackState = components["schemas"]["CallbackState"];
/** An operational webhook of the organization (GET /api/webhooks). */
export type Webhook = components["schemas"]["Webhook"];
export type WebhookType = Webhook["types"][number];

/** Every notice type, in the order the webhook form offers them: one the API adds or drops fails the typecheck here. */
const WEBHOOK_TYPE_ORDER: { [Type in WebhookType]: true } = {
  "event.failed": true,
  "cron.run.failed": true,
  "destination.unhealthy": true,
  "destination.healthy": true,
  "quota.warning": true,
  "quota.reached": true,
};
export const WEBHOOK_TYPES: readonly WebhookType[] = Object.keys(WEBHOOK_TYPE_ORDER) as WebhookType[];

/** One firing of a preview: its time, which run it is (null past `maxRuns`) and when that run is sent (jitter). */
export type PreviewFiring = CronPreview["firings"][number];
/** What an edit may set a cron job's status to: `Completed` is reached by the job itself, never set. */
export type EditableCronJobStatus = NonNullable<UpdateCronJobRequest["status"]>;
export type CatchUpPolicy = CronJob["catchUp"];
export type OverlapPolicy = CronJob["overlap"];

/** Every catch-up policy, in the order the form offers them: one the API adds or drops fails the typecheck here. */
const CATCH_UP_ORDER: { [Policy in CatchUpPolicy]: true } = { skip: true, latest: true, all: true };
export const CATCH_UP_POLICIES: readonly CatchUpPolicy[] = Object.keys(CATCH_UP_ORDER) as CatchUpPolicy[];

/** Every overlap policy, in the order the form offers them. */
const OVERLAP_ORDER: { [Policy in OverlapPolicy]: true } = { allow: true, skip: true, buffer: true };
export const OVERLAP_POLICIES: readonly OverlapPolicy[] = Object.keys(OVERLAP_ORDER) as OverlapPolicy[];
