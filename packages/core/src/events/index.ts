export * from "./event-record.ts";
export * from "./event-scheduler.ts";
export * from "./lifecycle.ts";
