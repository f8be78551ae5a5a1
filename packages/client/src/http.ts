import createClient, { type Client } from "openapi-fetch";
import { PunctualError } from "./errors.ts";
import type { paths } from "./generated/openapi.ts";
import { type Fetch, type RetryOptions, retryingFetch } from "./retry.ts";

/** Settings shared by the organization's client and the admin client. */
export interface ConnectionOptions {
  /**
   * Where Punctual's API listens: its root, e.g. `http://localhost:3000` (not `…/api`: the paths
   * already start with `/api`). Behind a proxy that mounts it under a prefix, that prefix included.
   */
  baseUrl: string;
  /** Retries after 429 Too Many Requests (see RetryOptions); `false` turns them off. */
  retry?: RetryOptions | false;
  /** The fetch to send requests with; the global one by default. */
  fetch?: Fetch;
  /** More headers for every request (e.g. for a proxy in front of Punctual). */
  headers?: Record<string, string>;
}

/** Per call: an AbortSignal ends the request, and a retry's wait, early. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** The typed `openapi-fetch` client every method is built on, for calls the methods do not cover. */
export type PunctualHttp = Client<paths>;

export function createHttp(options: ConnectionOptions, auth: Record<string, string>): PunctualHttp {
  const fetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { ...options.headers, ...auth },
    fetch: retryingFetch(fetch, options.retry),
  });
}

type Result<T> = { data: T; error?: never; response: Response } | { data?: never; error?: unknown; response: Response };

/**
 * The body of a 2xx answer, or a PunctualError for anything else. openapi-fetch hands back an empty
 * error for an answer without a body, so the status decides, not the presence of `error`. (`data`
 * is absent only from an error's result or a 204's, whose callers use no body.)
 */
export async function unwrap<T>(operation: string, call: Promise<Result<T>>): Promise<Exclude<T, undefined>> {
  const result = await call;
  const { response } = result;
  if (!response.ok) {
    throw new PunctualError({
      status: response.status,
      statusText: response.statusText,
      operation,
      body: result.error,
      headers: response.headers,
    });
  }
  return result.data as Exclude<T, undefined>;
}

/** A moment, as a Date or an ISO 8601 string with a zone; sent as an ISO 8601 string. */
export type Instant = Date | string;

/**
 * A request body with its Date values written as ISO 8601 strings, the form the document declares
 * (JSON.stringify would write the same; converting here keeps the body's type truthful).
 */
export function isoDates<T extends object>(body: object): T {
  const entries = Object.entries(body).map(([name, value]) => [
    name,
    value instanceof Date ? value.toISOString() : value,
  ]);
  return Object.fromEntries(entries) as T;
}

type QueryValue = string | number | Date | readonly string[] | undefined;

/**
 * Query parameters as Punctual reads them: Dates as ISO 8601, numbers in decimal, lists joined
 * with commas (`status=Sent,Failed To Send`), absent values left out.
 */
export function toQuery(query: object | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(query ?? {}) as [string, QueryValue][]) {
    if (value === undefined) continue;
    if (value instanceof Date) result[name] = value.toISOString();
    else if (Array.isArray(value)) result[name] = value.join(",");
    else result[name] = String(value);
  }
  return result;
}
