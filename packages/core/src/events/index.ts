export * from "./event-record.ts";
export * from "./lifecycle.ts";
export * from "./event-scheduler.ts";
