// Delivery policy (contract §10.1): request schemas, stored and resolved policies, redaction,
// retry planning and request bodies. Pure code, no I/O.

export * from "./policy.ts";
export * from "./policy-schema.ts";
export * from "./redaction.ts";
export * from "./request-body.ts";
export * from "./retry-schedule.ts";
