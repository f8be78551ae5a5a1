import {
  buildDeliveryRequest,
  type Clock,
  type Config,
  type DueNotice,
  type Logger,
  postponeNotice,
  recordNoticeAttempt,
  takeDueNotices,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import type { FlowGate } from "../delivery/flow-gate.ts";
import { recordSurely } from "../delivery/retry.ts";
import { originOf } from "../delivery/transport.ts";

/** How often a worker looks for due notices when nothing told it of one sooner. */
export const NOTICE_POLL_MS = 500;
/** A notice taken is this worker's for this long; past it (the worker died), another takes it again. */
export const NOTICE_LEASE_MS = 5 * 60_000;
/** The most notices taken in one look. */
const NOTICE_BATCH = 100;

export interface NoticeSenderDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "RETRY_DELAYS_MS" | "DELIVERY_TIMEOUT_MS">;
  dispatcher: Pick<Dispatcher, "submit">;
  gate: Pick<FlowGate, "admit">;
  logger: Logger;
}

export interface NoticeSender {
  start(): void;
  /** Takes no more notices and waits for those in flight to be recorded. */
  stop(): Promise<void>;
}

/**
 * Sends the outbox of notices (callbacks and operational webhooks, outcomes/notices.ts in core):
 * each worker takes due notices under a lease and sends each as any delivery goes, through the
 * flow gate (its origin's health and the breaker) and the dispatcher (turns per organization, caps
 * per origin) and the transport (the private-address guard), signed with the organization's
 * secrets, `webhook-id` the notice's. A failed notice is retried on the deployment's
 * `RETRY_DELAYS_MS`, then ends Failed. Its outcome makes no notice of its own.
 */
export function createNoticeSender(deps: NoticeSenderDeps): NoticeSender {
  const { db, clock, config, dispatcher, gate, logger } = deps;
  const inFlight = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms since the epoch): a later look asked for does not put it off. */
  let timerAt = Number.POSITIVE_INFINITY;
  let looking = false;
  let again = false;
  let stopped = true;

  function schedule(ms: number) {
    if (stopped) return;
    const at = Date.now() + ms;
    if (timer && at >= timerAt) return;
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(look, ms);
    timer.unref();
  }

  async function look(): Promise<void> {
    timer = undefined;
    timerAt = Number.POSITIVE_INFINITY;
    if (stopped) return;
    if (looking) {
      again = true;
      return;
    }
    looking = true;
    try {
      const due = await takeDueNotices(db, clock.now(), NOTICE_LEASE_MS, NOTICE_BATCH);
      for (const notice of due) track(send(notice));
      again ||= due.length === NOTICE_BATCH;
    } catch (error) {
      logger.warn({ err: error }, "could not take due notices; looking again shortly");
    } finally {
      looking = false;
      schedule(again ? 0 : NOTICE_POLL_MS);
      again = false;
    }
  }

  function track(sending: Promise<void>) {
    const tracked = sending.catch((error: unknown) => logger.error({ err: error }, "notice not recorded"));
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  }

  async function send(notice: DueNotice): Promise<void> {
    const origin = originOf(notice.url);
    const timeoutMs = config.DELIVERY_TIMEOUT_MS;
    const admission = await gate.admit({
      orgId: notice.orgId,
      origin,
      flowKey: null,
      dueAt: notice.dueAt.getTime(),
      timeoutMs,
      deadline: undefined,
    });
    if (admission.kind !== "admitted") {
      // Held back (its origin Unhealthy, or the worker stopping): Pending again, for any worker.
      const at = admission.kind === "handBack" ? admission.at : Date.now() + NOTICE_POLL_MS;
      await postponeNotice(db, notice.id, new Date(at));
      return;
    }
    const request = buildDeliveryRequest({
      webhookId: notice.webhookId,
      payload: notice.body,
      scheduledTime: notice.dueAt,
      signingSecret: notice.signingSecret,
      previousSigningSecret: notice.previousSigningSecret,
      now: clock.now(),
      // The notice's JSON itself is the body (application/json), signed as every delivery.
      policy: { method: "POST", body: "raw", headers: {} },
    });
    const outcome = await dispatcher.submit(notice.orgId, origin, {
      url: notice.url,
      method: request.method,
      body: request.body,
      headers: request.headers,
      timeoutMs,
    });
    admission.done(outcome);
    const attempt = notice.attempts + 1;
    const delay = config.RETRY_DELAYS_MS[attempt - 1];
    const retryAt = outcome.ok || delay === undefined ? undefined : new Date(clock.now().getTime() + delay);
    const status = await recordSurely(
      () =>
        recordNoticeAttempt(
          db,
          notice.id,
          {
            at: outcome.startedAt,
            responseStatus: outcome.responseStatus,
            responseBody: outcome.responseBody,
            error: outcome.error,
          },
          outcome.ok,
          retryAt,
        ),
      (error) => logger.warn({ err: error, noticeId: notice.id }, "could not record a notice's attempt; retrying"),
    );
    const line = { noticeId: notice.id, orgId: notice.orgId, type: notice.type, attempt, status, error: outcome.error };
    if (status === "Failed") logger.info(line, "notice failed after its last attempt");
    else logger.debug(line, status === "Sent" ? "notice sent" : "notice attempt failed; retrying");
    if (retryAt) schedule(Math.max(0, retryAt.getTime() - Date.now()));
  }

  return {
    start() {
      stopped = false;
      schedule(0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await Promise.all([...inFlight]);
    },
  };
}
