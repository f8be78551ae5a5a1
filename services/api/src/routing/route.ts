import type { Config } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";
import type { z } from "zod";
import type { EventRequestLimits } from "../events/schemas.ts";
import { answeringFailuresWith } from "../middleware/errors.ts";

// One declaration per endpoint, beside its handler: what the router mounts and what the OpenAPI
// document says come from the same object, so neither can drift from the other.

export type Json = Record<string, unknown>;

/** The configuration the document depends on (its limits appear in texts and schemas). */
export type DocumentConfig = Pick<
  Config,
  | "MAX_PAYLOAD_BYTES"
  | "MAX_LIST_RESULTS"
  | "MAX_EVENTS_PER_MONTH"
  | "MAX_CRON_JOBS_PER_ORG"
  | "MAX_FLOWS_PER_ORG"
  | "MAX_ORGS_PER_ACCOUNT"
  | "SEARCH_WINDOW_DAYS"
  | "HISTORY_DAYS"
  | "RATE_LIMIT_PER_MINUTE"
  | "RATE_LIMIT_BLOCK_SECONDS"
>;

/** A value of the document, fixed or computed from the deployment's configuration. */
export type Documented<T> = T | ((config: DocumentConfig) => T);

export function resolveDocumented<T>(value: Documented<T>, config: DocumentConfig): T {
  return typeof value === "function" ? (value as (config: DocumentConfig) => T)(config) : value;
}

/**
 * Who may call: an organization's API key, the admin token, the dashboard's credentials, anyone, or
 * only a console session. An organization's console session also stands for its API key, and the
 * operator's for the admin token (the document lists the cookie beside them).
 */
export type Security = "apiKey" | "admin" | "adminUi" | "consoleSession" | "none";

/** What the request schemas are built with: the deployment's limits and clock. */
export type RequestLimits = EventRequestLimits;

export interface ResponseDeclaration {
  description: Documented<string>;
  /** A component schema name, or a JSON schema, for `application/json`; absent for no body. */
  json?: string | Json;
  /** Another media type's body, e.g. `text/html`. */
  content?: Json;
  /** Names of `components.headers` the answer carries. */
  headers?: string[];
  /** Error messages this status answers with (shown as examples). */
  messages?: Documented<string>[];
}

/** The JSON request body: its component name and the schema the handler validates it with. */
export interface BodyDeclaration<B extends z.ZodType> {
  component: string;
  schema: (limits: RequestLimits) => B;
  /** The body may be left out (the handler then takes `{}`); the document says it is not required. */
  optional?: boolean;
}

export type Handler = (req: Request, res: Response, next: NextFunction) => void | Promise<void>;

/** Everything the document says about an endpoint. */
export interface OperationDeclaration {
  method: "get" | "post" | "put" | "delete";
  /** The full path in OpenAPI form (`/api/events/{eventId}`); the router derives its own from it. */
  path: string;
  operationId: string;
  summary: string;
  description?: Documented<string>;
  tag: string;
  security: Security;
  /** OpenAPI parameter objects (see routing/parameters.ts). */
  parameters?: Documented<Json[]>;
  body?: BodyDeclaration<z.ZodType>;
  /**
   * The 500 answer's own message: an unexpected failure of the handler answers it (instead of the
   * generic one) and the document lists it.
   */
  failure?: string;
  /** Every status the handler itself answers, with its messages (500 comes from `failure`). */
  responses: Record<string, ResponseDeclaration>;
}

/** A declared endpoint; `handle` is absent for one served by something else (Bull Board). */
export interface Route<D> extends OperationDeclaration {
  handle?: (deps: D, limits: RequestLimits) => Handler;
}

export interface RouteDeclaration<D, B extends z.ZodType> extends OperationDeclaration {
  body?: BodyDeclaration<B>;
  /** Builds the handler once per app; `body` is the schema built for the deployment's limits. */
  handler: (deps: D, body: B) => Handler;
}

const unexpected = (message: string): ResponseDeclaration => ({
  description: "Unexpected failure.",
  json: "Error",
  messages: [message],
});

/** Declares an endpoint served by its handler. */
export function defineRoute<D, B extends z.ZodType = z.ZodNever>(declaration: RouteDeclaration<D, B>): Route<D> {
  const { handler, ...operation } = declaration;
  const { body, failure } = declaration;
  return {
    ...operation,
    responses: failure ? { ...operation.responses, "500": unexpected(failure) } : operation.responses,
    handle: (deps, limits) => {
      const built = handler(deps, (body ? body.schema(limits) : undefined) as B);
      return failure ? answeringFailuresWith(failure, built) : built;
    },
  };
}

/** Declares an endpoint that is documented here but served by a mounted app of its own. */
export function documentRoute(declaration: OperationDeclaration): Route<unknown> {
  return declaration;
}

/** An error answer: `{message}` with the messages it may carry. */
export function errorResponse(description: string, ...messages: Documented<string>[]): ResponseDeclaration {
  return { description, json: "Error", messages };
}

/** Answers of every request that carries a JSON body (the json-body middleware's). */
export const BODY_RESPONSES: Record<string, ResponseDeclaration> = {
  "413": errorResponse("The body is over 16 KiB.", "Request body is too large"),
  "415": errorResponse(
    "The body is not JSON: its `Content-Type` is another type, or missing (a request without a body needs none).",
    "Content-Type must be application/json",
  ),
};
