// The organization's API and the admin API, typed from Punctual's OpenAPI document. The verifier
// of signed deliveries is its own entry point, `@punctual/client/webhooks`: a receiver does not
// load the API client, and code that only calls the API does not load the verifier's dependencies.

export { createPunctualAdminClient, type PunctualAdminClient, type PunctualAdminClientOptions } from "./admin.ts";
export {
  type CreateEventOptions,
  createPunctualClient,
  type PunctualClient,
  type PunctualClientOptions,
} from "./client.ts";
export { PunctualError } from "./errors.ts";
export type { components, operations, paths } from "./generated/openapi.ts";
export type { CallOptions, ConnectionOptions, Instant, PunctualHttp } from "./http.ts";
export type { Fetch, RetryOptions } from "./retry.ts";
export type * from "./types.ts";
