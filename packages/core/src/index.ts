// The public surface of @punctual/core: what the services, scripts and tests use. Everything else in
// this package is internal to it; a new export here is a decision, not a side effect.

export { createBatcher } from "./batcher.ts";
export type { Clock } from "./clock.ts";
export { DAY_MS, daysBefore, fixedClock, systemClock } from "./clock.ts";
export type { Config, RedisClusterSettings } from "./config.ts";
export { AdminTokenSchema, ConfigError, ConfigSchema, hashTagOf, loadConfig } from "./config.ts";
export type { ApiKeyConsoleSessions, SessionCredential } from "./console-sessions.ts";
export {
  apiKeyConsoleSessions,
  consoleSessionIndexKey,
  consoleSessionKey,
  consoleSessionKeyPrefix,
  endConsoleSessionsOf,
} from "./console-sessions.ts";
export type { CronJobFiringState, FiringPlan, FiringRules, PlannedRun } from "./cron/catch-up.ts";
export { CATCH_UP_MAX_RUNS, latestFiring, needsSettling, planFirings, recentFirings } from "./cron/catch-up.ts";
export type { CronJobSchedulers } from "./cron/cron-job-schedulers.ts";
export {
  CRON_RUN_JOB,
  createCronJobSchedulers,
  queueFiringsWithinLead,
  schedulerFiringJobIds,
  schedulerJobIdAt,
} from "./cron/cron-job-schedulers.ts";
export type { CronJobTiming, CronJobWithPolicy } from "./cron/cron-jobs.ts";
export {
  CRON_JOB_COMPLETED,
  CRON_JOB_NOT_FOUND,
  createCronJob,
  DEFAULT_CATCH_UP_WINDOW_MS,
  deleteCronJob,
  findCronJob,
  listCronJobs,
  timingOf,
  updateCronJob,
} from "./cron/cron-jobs.ts";
export type { CronJobRecord, CronJobView } from "./cron/cron-record.ts";
export { toCronJobView } from "./cron/cron-record.ts";
export type {
  CronFiringRules,
  CronJobsSettled,
  FiringAftermath,
  RunWait,
  StartRunResult,
} from "./cron/cron-runs.ts";
export {
  DEFAULT_FIRING_RULES,
  listCronRuns,
  nextWaitingCronRun,
  recordCronRunAttempt,
  releaseCronRunClaim,
  settleCronJobs,
  startCronRun,
  startDefaultCronRun,
  takeOverCronRun,
} from "./cron/cron-runs.ts";
export type { CronExpressionCheck } from "./cron/expression.ts";
export {
  checkCronExpression,
  cronExpressionNeverFires,
  cronNeverFires,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  isValidCronExpression,
  isValidTimezone,
  nextCronRun,
  nextCronRuns,
  normalizeCronExpression,
} from "./cron/expression.ts";
export type { Schedule, ScheduleFields } from "./cron/schedule.ts";
export {
  CRON_LEAD_MS,
  CRON_QUEUE_SETTINGS,
  cronRepeatStrategy,
  EVERY_INVALID,
  EVERY_TOO_SHORT,
  firingOfSchedulerJob,
  firingsBetween,
  firstIntervalFiring,
  jitterOf,
  leadOfRepeatOptions,
  MIN_EVERY_MS,
  nextFiring,
  nextFirings,
  parseEvery,
  repeatOptionsOf,
  scheduleOf,
  scheduleOfRepeatOptions,
} from "./cron/schedule.ts";
export type { CronJobTimingEdit } from "./cron/schedule-rules.ts";
export {
  applyTimingEdit,
  CATCH_UP_ONE_OF,
  CATCH_UP_WINDOW_RANGE,
  checkCatchUp,
  checkCatchUpWindow,
  checkEvery,
  checkJitter,
  checkMaxRuns,
  checkOverlap,
  END_AT_NOT_AFTER_START_AT,
  END_AT_PAST,
  EVERY_TOO_LONG,
  EXPRESSION_OR_EVERY,
  firingTimesDiffer,
  givesBothExpressionAndEvery,
  hasTimingEdit,
  JITTER_RANGE,
  MAX_CATCH_UP_WINDOW_MS,
  MAX_EVERY_MS,
  MAX_JITTER_MS,
  MAX_MAX_RUNS,
  MAX_RUNS_RANGE,
  MIN_CATCH_UP_WINDOW_MS,
  NEVER_FIRES_BEFORE_END_AT,
  OVERLAP_ONE_OF,
  scheduleOfTiming,
  timeInvalid,
  timeZoneRequired,
  timingProblem,
} from "./cron/schedule-rules.ts";
export type { DeliveryOwner } from "./delivery-owner.ts";
export * from "./delivery-policy/index.ts";
export { checkDependencies, postgresProblem, redactUrl, STARTUP_CHECK_TIMEOUT_MS } from "./dependency-checks.ts";
export {
  checkDestination,
  createGuardedLookup,
  DESTINATION_MAX_LENGTH,
  DESTINATION_NOT_HTTP_URL_MESSAGE,
  deliveryErrorText,
  FORBIDDEN_DESTINATION_MESSAGE,
  literalHostAddress,
  literalHostForbidden,
  parseDestination,
  REFUSED_DESTINATION_EXAMPLE,
  refusedDestinationMessage,
} from "./destinations.ts";
export { loadEnvFile } from "./env-file.ts";
export { AppError, badRequest, forbidden, notFound } from "./errors.ts";
export {
  consumedShards,
  createEventQueues,
  eventQueueLabel,
  eventQueuePrefixes,
  eventShardOf,
  keySlot,
} from "./event-shards.ts";
export type { AttemptOfEvent, RecordedAttempt } from "./events/attempt-records.ts";
export { readFirstAttempts, recordAttempts } from "./events/attempt-records.ts";
export { BULK_CANCEL_BATCH, cancelPendingEvents, MAX_BULK_CANCEL } from "./events/bulk-cancel.ts";
export type { ClaimedEvent, ClaimResult, EventState, Takeover } from "./events/event-claims.ts";
export {
  claimEvents,
  failUnqueuedEvents,
  readEventStates,
  releaseClaims,
  takeOverEvents,
} from "./events/event-claims.ts";
export {
  createEvent,
  createEventBatch,
  createEventCreator,
  IDEMPOTENCY_KEY_REUSED,
  MAX_EVENT_BATCH,
} from "./events/event-creator.ts";
export { ONLY_PENDING, updatePendingEvent } from "./events/event-edits.ts";
export { type EventFilter, eventFilterConditions, filtersSomething } from "./events/event-filters.ts";
export type { EventQueue } from "./events/event-queue.ts";
export { createEventQueue } from "./events/event-queue.ts";
export type { EventRecord, EventRow } from "./events/event-record.ts";
export {
  EVENT_COLUMNS,
  EVENT_NOT_FOUND,
  effectivePolicyView,
  eventFromRow,
  toEventView,
} from "./events/event-record.ts";
export * from "./events/labels.ts";
export { MonthlyLimitReached, quotaMonth } from "./events/monthly-quota.ts";
export type { BulkReplayableStatus, BulkReplayFilter } from "./events/replay.ts";
export {
  BULK_REPLAYABLE,
  MAX_BULK_REPLAY,
  ONLY_SENT_OR_FAILED,
  replayEvent,
  replayFailedEvents,
} from "./events/replay.ts";
export type { VisibilityWindow } from "./events/visibility.ts";
export { searchWindowStart, visibleEventSql } from "./events/visibility.ts";
export type {
  AdmissionAsk,
  AdmissionStore,
  Admitted,
  BreakerSettings,
  DestinationHealth,
  FlowLimits,
  HealthReport,
  HealthState,
  HeldSummary,
  HoldReason,
} from "./flows/admission-store.ts";
export { createAdmissionStore, HEALTH_RETENTION_MS, HELD_SUMMARY_TTL_MS } from "./flows/admission-store.ts";
export type { FlowLimitsInput, FlowRecord } from "./flows/flow-records.ts";
export {
  countPausedFlows,
  deleteFlow,
  findFlow,
  flowLimitsKey,
  listFlows,
  NO_FLOW_LIMITS,
  pauseFlow,
  readFlowLimits,
  resumeFlow,
  setFlowLimits,
} from "./flows/flow-records.ts";
export {
  DEFAULT_FLOW_PERIOD_MS,
  FLOW_KEY_INVALID,
  FLOW_KEY_PATTERN,
  FLOW_PARALLELISM_RANGE,
  FLOW_PERIOD_RANGE,
  FLOW_RATE_RANGE,
  flowLimitReached,
  flowNotFound,
  flowNotFoundMessage,
  isFlowKey,
  MAX_FLOW_KEY_LENGTH,
  MAX_FLOW_PARALLELISM,
  MAX_FLOW_PERIOD_MS,
  MAX_FLOW_RATE,
  MIN_FLOW_PARALLELISM,
  MIN_FLOW_PERIOD_MS,
  MIN_FLOW_RATE,
} from "./flows/flow-rules.ts";
export { newId } from "./ids.ts";
export type { Logger } from "./logger.ts";
export { createLogger } from "./logger.ts";
export { escapeUnsafeText, safeJsonStringify } from "./organizations/display.ts";
export type { AdminDeps } from "./organizations/operations.ts";
export {
  API_KEY_NOT_FOUND,
  addMember,
  createAccount,
  createApiKey,
  createOrganization,
  endSigningSecretOverlap,
  listApiKeys,
  listMembers,
  listOrganizations,
  ORGANIZATION_NOT_FOUND,
  revokeApiKey,
  rotateApiKey,
  rotateSigningSecret,
} from "./organizations/operations.ts";
export {
  AddMemberInputSchema,
  CreateAccountInputSchema,
  CreateOrganizationInputSchema,
  keyId,
  orgId,
  RotateSecretInputSchema,
} from "./organizations/schemas.ts";
export { readSigningSecrets, readSigningSecretsOf } from "./organizations/signing-secrets.ts";
export type { DeliveryPolicyEdit } from "./organizations/stored-delivery-policy.ts";
export {
  applyPolicyEdit,
  readDefaultDeliveryPolicy,
  storeDefaultDeliveryPolicy,
} from "./organizations/stored-delivery-policy.ts";
export type { CallbackView, DueNotice, NoticeAttempt } from "./outcomes/notice-sends.ts";
export { postponeNotice, readCallbacks, recordNoticeAttempt, takeDueNotices } from "./outcomes/notice-sends.ts";
export type { CallbackType, NoticeStatus, WebhookType } from "./outcomes/notices.ts";
export {
  CALLBACK_TYPES,
  noticeDestinationHealth,
  noticeQuotaRefusal,
  QUOTA_WARNING_SHARE,
  WEBHOOK_TYPES,
  wantsQuotaNotices,
} from "./outcomes/notices.ts";
export type { WebhookView } from "./outcomes/webhooks.ts";
export {
  createWebhook,
  deleteWebhook,
  listWebhooks,
  MAX_WEBHOOKS_PER_ORG,
  WEBHOOK_LIMIT_REACHED,
  WEBHOOK_NOT_FOUND,
} from "./outcomes/webhooks.ts";
export {
  apiListenTarget,
  ensurePortFree,
  listenError,
  listeningUrl,
  workerHealthTarget,
  workerHealthUrl,
} from "./ports.ts";
export type { CronJobData, EventJobData, QueueName } from "./queues.ts";
export {
  cronJobIdOfScheduler,
  cronRunRedriveJobId,
  cronSchedulerId,
  EVENT_JOB_NAME,
  EVENT_JOB_OPTIONS,
  eventChangesChannel,
  eventJobId,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
  MAINTENANCE_JOBS,
  QUEUE_NAMES,
} from "./queues.ts";
export type { Redis, RedisTarget } from "./redis.ts";
export { createFailFastRedis, createRedis } from "./redis.ts";
export { generateApiKey, generateSigningSecret, hashApiKey } from "./secrets.ts";
export type { ServiceStatus, WorkerHeartbeat } from "./service-status.ts";
export {
  announceWorker,
  HEARTBEAT_INTERVAL_MS,
  HEARTBEAT_TTL_MS,
  readServiceStatus,
  recordFailureNoticeSent,
  recordReconcilerRun,
  withdrawWorker,
  workerHeartbeatsLeft,
} from "./service-status.ts";
export { orExit, type Stoppable, startStoppable, stopOnSignals } from "./shutdown.ts";
export { buildDeliveryRequest, DEFAULT_USER_AGENT } from "./signing.ts";
export { configForStart, type StartingProcess } from "./start-checks.ts";
export { StartupError, startOrExit } from "./startup-error.ts";
export type { CatchUpPolicy, CronJobStatus, EventStatus, OverlapPolicy } from "./statuses.ts";
export {
  CATCH_UP_POLICIES,
  CRON_JOB_STATUSES,
  CRON_RUN_STATUSES,
  EVENT_STATUSES,
  isEventStatus,
  NEXT_EXECUTION_STATUSES,
  OVERLAP_POLICIES,
} from "./statuses.ts";
export { withTimeout } from "./timeout.ts";
export { parseInput } from "./validation.ts";
