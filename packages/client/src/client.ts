import type { components } from "./generated/openapi.ts";
import {
  type CallOptions,
  type ConnectionOptions,
  createHttp,
  isoDates,
  type PunctualHttp,
  toQuery,
  unwrap,
} from "./http.ts";
import type {
  BulkReplayRequest,
  BulkReplayResult,
  CreateCronJobRequest,
  CreateEventRequest,
  CronJob,
  CronJobWithHistory,
  CronPreview,
  CronPreviewQuery,
  DeliveryPolicy,
  Destination,
  Event,
  EventPage,
  EventWithHistory,
  Flow,
  FlowWithCounts,
  ListEventsQuery,
  RawQuery,
  ReplayEventRequest,
  SetFlowRequest,
  Stats,
  StatsQuery,
  TestDeliveryRequest,
  TestDeliveryResult,
  UpdateCronJobRequest,
  UpdateEventRequest,
} from "./types.ts";

export interface PunctualClientOptions extends ConnectionOptions {
  /** The organization's API key (`pk_…`), sent as `x-api-key`. */
  apiKey: string;
}

export interface CreateEventOptions extends CallOptions {
  /**
   * Sent as `Idempotency-Key`: a repeat of the same request with the same key within 24 hours
   * answers the first event and creates nothing (a different request with that key: 422). Use one
   * key per event you mean to create, and send it again when you retry after a lost answer.
   */
  idempotencyKey?: string;
}

type Schemas = components["schemas"];

/** The next-page header of `GET /api/events`. */
const NEXT_CURSOR = "X-Next-Cursor";

/**
 * A client of one organization's API, authenticated with its API key. Every method answers the
 * parsed body of a 2xx answer and throws a PunctualError (the server's `message` and the status)
 * for anything else.
 */
export function createPunctualClient(options: PunctualClientOptions) {
  const http: PunctualHttp = createHttp(options, { "x-api-key": options.apiKey });

  const events = {
    /** `POST /api/events`: schedules a delivery of `payload` to `destination` at `scheduledTime`. */
    create(body: CreateEventRequest, { idempotencyKey, signal }: CreateEventOptions = {}): Promise<Event> {
      return unwrap(
        "createEvent",
        http.POST("/api/events", {
          body: isoDates<Schemas["CreateEventRequest"]>(body),
          params: { header: idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey } },
          signal,
        }),
      );
    },

    /** `GET /api/events/{eventId}`: the event with every delivery attempt. */
    get(eventId: string, { signal }: CallOptions = {}): Promise<EventWithHistory> {
      return unwrap("getEvent", http.GET("/api/events/{eventId}", { params: { path: { eventId } }, signal }));
    },

    /**
     * `GET /api/events`: one page of events by `scheduledTime`, and the cursor of the next page. Pass
     * `nextCursor` back as `cursor` (with the same filters), or let `listAll` do it.
     */
    async list(query: ListEventsQuery = {}, { signal }: CallOptions = {}): Promise<EventPage> {
      const call = http.GET("/api/events", { params: { query: toQuery(query) as RawQuery<"getManyEvents"> }, signal });
      const { response } = await call;
      const events = await unwrap("getManyEvents", call);
      return { events, nextCursor: response.headers.get(NEXT_CURSOR) };
    },

    /** Every event matching the filters, page after page (`limit` is the page size). */
    async *listAll(query: Omit<ListEventsQuery, "cursor"> = {}, { signal }: CallOptions = {}): AsyncGenerator<Event> {
      let cursor: string | null | undefined;
      do {
        const page = await events.list({ ...query, ...(cursor ? { cursor } : {}) }, { signal });
        yield* page.events;
        cursor = page.nextCursor;
      } while (cursor);
    },

    /** `PUT /api/events/{eventId}`: changes a `Pending` event's payload, destination or time. */
    edit(eventId: string, body: UpdateEventRequest, { signal }: CallOptions = {}): Promise<Event> {
      return unwrap(
        "editEvent",
        http.PUT("/api/events/{eventId}", {
          params: { path: { eventId } },
          body: isoDates<Schemas["UpdateEventRequest"]>(body),
          signal,
        }),
      );
    },

    /** Cancels a `Pending` event (`PUT /api/events/{eventId}` with `status: "Cancelled"`). */
    cancel(eventId: string, { signal }: CallOptions = {}): Promise<Event> {
      return unwrap(
        "editEvent",
        http.PUT("/api/events/{eventId}", { params: { path: { eventId } }, body: { status: "Cancelled" }, signal }),
      );
    },

    /** `POST /api/events/{eventId}/replay`: a new event with the same payload, due now or at `scheduledTime`. */
    replay(eventId: string, body: ReplayEventRequest = {}, { signal }: CallOptions = {}): Promise<Event> {
      return unwrap(
        "replayEvent",
        http.POST("/api/events/{eventId}/replay", {
          params: { path: { eventId } },
          body: isoDates<Schemas["ReplayEventRequest"]>(body),
          signal,
        }),
      );
    },

    /** `POST /api/events/replay`: replays, due now, the failed events that match (each at most once). */
    replayMany(body: BulkReplayRequest, { signal }: CallOptions = {}): Promise<BulkReplayResult> {
      const status = typeof body.status === "string" ? body.status : body.status.join(",");
      return unwrap(
        "replayEvents",
        http.POST("/api/events/replay", { body: isoDates<Schemas["BulkReplayRequest"]>({ ...body, status }), signal }),
      );
    },

    /**
     * `POST /api/events/batch`: up to 1000 events, all or none (`Event <index>: …` names a refused
     * item); the answer lists them in the order given.
     */
    createMany(body: Schemas["CreateEventsBatchRequest"], { signal }: CallOptions = {}) {
      return unwrap("createEvents", http.POST("/api/events/batch", { body, signal }));
    },

    /** `POST /api/events/cancel`: cancels the `Pending` events that match (up to 10,000), answering how many. */
    cancelMany(body: Schemas["CancelEventsRequest"], { signal }: CallOptions = {}) {
      return unwrap("cancelEvents", http.POST("/api/events/cancel", { body, signal }));
    },

    /** `POST /api/events/test`: one signed delivery now, answering what the receiver did. */
    testDelivery(body: TestDeliveryRequest, { signal }: CallOptions = {}): Promise<TestDeliveryResult> {
      return unwrap("testDelivery", http.POST("/api/events/test", { body, signal }));
    },
  };

  const cronJobs = {
    /**
     * `POST /api/cronjobs`: delivers `payload` to `destination` at every firing of its `expression` or
     * `every` interval, inside its window (`startAt`, `endAt`), at most `maxRuns` times.
     */
    create(body: CreateCronJobRequest, { signal }: CallOptions = {}): Promise<CronJobWithHistory> {
      return unwrap("createCronJob", http.POST("/api/cronjobs", { body, signal }));
    },

    /** `GET /api/cronjobs/{cronJobId}`: the cron job with its recent runs. */
    get(cronJobId: string, { signal }: CallOptions = {}): Promise<CronJobWithHistory> {
      return unwrap("getCronJob", http.GET("/api/cronjobs/{cronJobId}", { params: { path: { cronJobId } }, signal }));
    },

    /** `GET /api/cronjobs`: every cron job of the organization, oldest first. */
    list({ signal }: CallOptions = {}): Promise<CronJob[]> {
      return unwrap("getManyCronJobs", http.GET("/api/cronjobs", { signal }));
    },

    /**
     * `PUT /api/cronjobs/{cronJobId}`: changes any field (`null` clears `every`, `expression`, `startAt`,
     * `endAt`, `maxRuns`); `status: "Disabled"` stops the runs. A `Completed` job answers 409.
     */
    edit(cronJobId: string, body: UpdateCronJobRequest, { signal }: CallOptions = {}): Promise<CronJobWithHistory> {
      return unwrap(
        "editCronJob",
        http.PUT("/api/cronjobs/{cronJobId}", { params: { path: { cronJobId } }, body, signal }),
      );
    },

    /** `DELETE /api/cronjobs/{cronJobId}`: deletes the cron job; no run starts after the answer. */
    async delete(cronJobId: string, { signal }: CallOptions = {}): Promise<void> {
      await unwrap(
        "deleteCronJob",
        http.DELETE("/api/cronjobs/{cronJobId}", { params: { path: { cronJobId } }, signal }),
      );
    },

    /**
     * `GET /api/cron-jobs/preview`: the next times a cron job with this timing would fire (`firings`, each
     * with its run number and send window), without creating anything.
     */
    preview(query: CronPreviewQuery, { signal }: CallOptions = {}): Promise<CronPreview> {
      return unwrap(
        "previewCronJob",
        http.GET("/api/cron-jobs/preview", {
          params: { query: toQuery(query) as RawQuery<"previewCronJob"> },
          signal,
        }),
      );
    },
  };

  const stats = {
    /** `GET /api/stats`: deliveries sent, failed and retried per bucket, lateness, and the month's usage. */
    get(query: StatsQuery = {}, { signal }: CallOptions = {}): Promise<Stats> {
      return unwrap(
        "getStats",
        http.GET("/api/stats", { params: { query: toQuery(query) as RawQuery<"getStats"> }, signal }),
      );
    },
  };

  const deliveryPolicy = {
    /** `GET /api/delivery-policy`: the organization's default policy (`{}` when none), redacted. */
    get({ signal }: CallOptions = {}): Promise<DeliveryPolicy> {
      return unwrap("getDeliveryPolicy", http.GET("/api/delivery-policy", { signal }));
    },

    /** `PUT /api/delivery-policy`: replaces the default for events and cron runs created afterwards; `{}` clears it. */
    set(body: DeliveryPolicy, { signal }: CallOptions = {}): Promise<DeliveryPolicy> {
      return unwrap("setDeliveryPolicy", http.PUT("/api/delivery-policy", { body, signal }));
    },
  };

  const flows = {
    /** `GET /api/flows`: the organization's configured flows, with what each holds back now. */
    list({ signal }: CallOptions = {}): Promise<FlowWithCounts[]> {
      return unwrap("listFlows", http.GET("/api/flows", { signal }));
    },

    /** `GET /api/flows/{flowKey}`: one flow's limits, pause and counts (404 when it has no record). */
    get(flowKey: string, { signal }: CallOptions = {}): Promise<FlowWithCounts> {
      return unwrap("getFlow", http.GET("/api/flows/{flowKey}", { params: { path: { flowKey } }, signal }));
    },

    /** `PUT /api/flows/{flowKey}`: replaces the flow's limits (a pause stays); `{}` removes them. */
    set(flowKey: string, body: SetFlowRequest, { signal }: CallOptions = {}): Promise<Flow> {
      return unwrap("setFlow", http.PUT("/api/flows/{flowKey}", { params: { path: { flowKey } }, body, signal }));
    },

    /** `DELETE /api/flows/{flowKey}`: removes the flow's limits and pause. */
    async delete(flowKey: string, { signal }: CallOptions = {}): Promise<void> {
      await unwrap("deleteFlow", http.DELETE("/api/flows/{flowKey}", { params: { path: { flowKey } }, signal }));
    },

    /** `POST /api/flows/{flowKey}/pause`: no attempt of the flow starts until it is resumed. */
    pause(flowKey: string, { signal }: CallOptions = {}): Promise<Flow> {
      return unwrap("pauseFlow", http.POST("/api/flows/{flowKey}/pause", { params: { path: { flowKey } }, signal }));
    },

    /** `POST /api/flows/{flowKey}/resume`: its waiting deliveries go, oldest first, under its limits. */
    resume(flowKey: string, { signal }: CallOptions = {}): Promise<Flow> {
      return unwrap("resumeFlow", http.POST("/api/flows/{flowKey}/resume", { params: { path: { flowKey } }, signal }));
    },
  };

  const destinations = {
    /** `GET /api/destinations`: each origin the organization's deliveries go to, with its health. */
    list({ signal }: CallOptions = {}): Promise<Destination[]> {
      return unwrap("listDestinations", http.GET("/api/destinations", { signal }));
    },

    /** `POST /api/destinations/reset`: makes the origin Healthy at once. */
    reset(origin: string, { signal }: CallOptions = {}): Promise<Destination> {
      return unwrap("resetDestination", http.POST("/api/destinations/reset", { body: { origin }, signal }));
    },
  };

  /** The organization's operational webhooks (at most 5): notices of failures, destination health and quota. */
  const webhooks = {
    /** `GET /api/webhooks`. */
    list({ signal }: CallOptions = {}) {
      return unwrap("listWebhooks", http.GET("/api/webhooks", { signal }));
    },

    /** `POST /api/webhooks`: `{ url, types }`. */
    create(body: Schemas["CreateWebhookRequest"], { signal }: CallOptions = {}) {
      return unwrap("createWebhook", http.POST("/api/webhooks", { body, signal }));
    },

    /** `DELETE /api/webhooks/{webhookId}`. */
    async delete(webhookId: string, { signal }: CallOptions = {}): Promise<void> {
      await unwrap(
        "deleteWebhook",
        http.DELETE("/api/webhooks/{webhookId}", { params: { path: { webhookId } }, signal }),
      );
    },
  };

  return { events, cronJobs, stats, deliveryPolicy, flows, destinations, webhooks, http };
}

export type PunctualClient = ReturnType<typeof createPunctualClient>;
