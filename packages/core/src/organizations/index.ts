export * from "./operations.ts";
export * from "./schemas.ts";
