export * from "./cron-record.ts";
export * from "./cron-scheduler.ts";
export * from "./expression.ts";
export * from "./lifecycle.ts";
