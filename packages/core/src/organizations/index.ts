export * from "./display.ts";
export * from "./operations.ts";
export * from "./schemas.ts";
