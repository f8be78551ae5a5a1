import { timingSafeEqual } from "node:crypto";
import { AppError, type Config, hashApiKey, parseInput } from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Request, Response } from "express";
import { z } from "zod";
import { CROSS_SITE_REQUEST_REFUSED } from "../admin-ui/browser-guards.ts";
import { type ApiKeyLookup, NOT_SIGNED_IN } from "../middleware/api-key-auth.ts";
import type { AdminAuthFailures } from "../rate-limit/admin-auth-failures.ts";
import { keySubject, TOO_MANY_REQUESTS } from "../rate-limit/rate-limit.ts";
import { BODY_RESPONSES, defineRoute, errorResponse, type ResponseDeclaration } from "../routing/route.ts";
import {
  clearSessionCookie,
  readSessionCookie,
  SEVERAL_SESSION_COOKIES,
  sessionCookiesOf,
  setSessionCookie,
} from "./session-cookie.ts";
import { adminTokenDigest, type ConsoleSession, type ConsoleSessions, type NewSession } from "./session-store.ts";

// The console signs in with an API key (an organization's pages) or the admin token
// (the operator's pages) and gets a session cookie instead; the page never holds the secret after
// sending it here once. Sign-ins are refused with the failed-admin-login budget per client
// address, so the sign-in form is no faster a way to guess keys or the token than the APIs.

/** Where the session routes are mounted. */
export const CONSOLE_API_PATH = "/console/api";

export const INVALID_API_KEY = "Invalid API key";
export const INVALID_ADMIN_TOKEN = "Invalid admin token";
const SIGN_IN_FAILURE = "Unable to complete the sign-in";

export interface ConsoleSessionDeps {
  config: Pick<Config, "ADMIN_TOKEN" | "CONSOLE_SESSION_TTL_SECONDS">;
  db: Db;
  sessions: ConsoleSessions;
  keys: ApiKeyLookup;
  adminAuthFailures: AdminAuthFailures;
}

const OrganizationSignInSchema = z.strictObject({
  apiKey: z
    .string()
    .min(1, "'apiKey' must not be empty")
    .max(256, "'apiKey' must be at most 256 characters")
    .meta({ description: "One of the organization's API keys (`pk_…`)" }),
});

const OperatorSignInSchema = z.strictObject({
  adminToken: z
    .string()
    .min(1, "'adminToken' must not be empty")
    .max(1024, "'adminToken' must be at most 1024 characters")
    .meta({ description: "The deployment's `ADMIN_TOKEN`" }),
});

/** What every session answer shows: never the API key or the admin token. */
export const ConsoleSessionSchema = z
  .strictObject({
    kind: z.enum(["organization", "operator"]),
    orgId: z.string().optional().meta({ description: "The organization's id (organization sessions only)" }),
    orgName: z.string().optional().meta({ description: "The organization's name (organization sessions only)" }),
    expiresAt: z.string().meta({ format: "date-time", description: "When the session ends unless signed out before" }),
  })
  .meta({
    examples: [
      {
        kind: "organization",
        orgId: "org_01kf2x3y4z5a6b7c8d9e0f1g2h",
        orgName: "Acme",
        expiresAt: "2026-01-15T21:30:00.000Z",
      },
      { kind: "operator", expiresAt: "2026-01-15T21:30:00.000Z" },
    ],
  });

type SessionView = z.infer<typeof ConsoleSessionSchema>;

function view(session: ConsoleSession, orgName?: string): SessionView {
  return session.kind === "organization"
    ? { kind: "organization", orgId: session.orgId, orgName: orgName ?? "", expiresAt: session.expiresAt }
    : { kind: "operator", expiresAt: session.expiresAt };
}

async function orgNameOf(db: Db, orgId: string): Promise<string | undefined> {
  const org = await db.organization.findUnique({ where: { id: orgId }, select: { name: true } });
  return org?.name;
}

/** Answers a new session and sets its cookie; no cache may keep the answer. */
async function answerNewSession(
  req: Request,
  res: Response,
  deps: ConsoleSessionDeps,
  fields: NewSession,
  orgName?: string,
): Promise<void> {
  const { id, session } = await deps.sessions.open(fields);
  setSessionCookie(req, res, id, deps.config.CONSOLE_SESSION_TTL_SECONDS);
  res.setHeader("Cache-Control", "no-store");
  res.json(view(session, orgName));
}

const session = (description: string): ResponseDeclaration => ({
  description,
  json: "ConsoleSession",
  headers: ["Set-Cookie"],
});
const blocked: ResponseDeclaration = {
  description:
    "Over the rate limit (contract §7), or this client address is blocked after `ADMIN_AUTH_FAILURES_PER_MINUTE` failed sign-ins or wrong admin tokens (the right credentials included, until the block ends); `Retry-After` says when to try again.",
  json: "Error",
  messages: [TOO_MANY_REQUESTS],
  headers: ["Retry-After"],
};
const crossSite = errorResponse(
  "Sent from another site's page (`Origin`, `Sec-Fetch-Site`).",
  CROSS_SITE_REQUEST_REFUSED,
);
const base = { tag: "Console" } as const;

const organizationSignInRoute = defineRoute({
  ...base,
  method: "post",
  path: "/console/api/session",
  operationId: "openConsoleSession",
  failure: SIGN_IN_FAILURE,
  summary: "Sign in to the console with an API key",
  description:
    "Opens an organization's console session and sets the `punctual_session` cookie (HttpOnly, SameSite=Strict, " +
    "Path=/; over HTTPS named `__Host-punctual_session` and Secure). With it, every `x-api-key` endpoint answers for the organization, counted " +
    "against the key's rate limit, until the session expires, is signed out, or the key is revoked or rotated.",
  security: "none",
  body: { component: "ConsoleSignInRequest", schema: () => OrganizationSignInSchema },
  responses: {
    "200": session("The session (never the key)."),
    "400": errorResponse("The body is invalid.", "'apiKey' is required"),
    "401": errorResponse("The key is unknown or revoked; counts as a failed sign-in.", INVALID_API_KEY),
    "403": crossSite,
    "429": blocked,
    ...BODY_RESPONSES,
  },
  handler: (deps: ConsoleSessionDeps, schema) => async (req: Request, res: Response) => {
    const { apiKey } = parseInput(schema, req.body ?? {});
    const key = await deps.keys.byHash(hashApiKey(apiKey));
    if (!key || key.revokedAt !== null) {
      await deps.adminAuthFailures.count(req, res, "console");
      throw new AppError("UNAUTHORIZED", INVALID_API_KEY);
    }
    const orgName = await orgNameOf(deps.db, key.orgId);
    const rateLimitKey = keySubject(apiKey);
    await answerNewSession(
      req,
      res,
      deps,
      { kind: "organization", orgId: key.orgId, apiKeyId: key.id, rateLimitKey },
      orgName,
    );
  },
});

const operatorSignInRoute = defineRoute({
  ...base,
  method: "post",
  path: "/console/api/operator-session",
  operationId: "openOperatorSession",
  failure: SIGN_IN_FAILURE,
  summary: "Sign in to the console as the operator",
  description:
    "Opens the operator's console session and sets the `punctual_session` cookie (`__Host-punctual_session` over HTTPS). With it, every `/api/admin` " +
    "endpoint answers as with the admin token, until the session expires, is signed out, or `ADMIN_TOKEN` changes.",
  security: "none",
  body: { component: "ConsoleOperatorSignInRequest", schema: () => OperatorSignInSchema },
  responses: {
    "200": session("The session (never the token)."),
    "400": errorResponse("The body is invalid.", "'adminToken' is required"),
    "401": errorResponse("The token is wrong; counts as a failed admin login.", INVALID_ADMIN_TOKEN),
    "403": crossSite,
    "404": errorResponse("No `ADMIN_TOKEN` is configured, so there is no operator.", "Not found"),
    "429": blocked,
    ...BODY_RESPONSES,
  },
  handler: (deps: ConsoleSessionDeps, schema) => {
    const token = deps.config.ADMIN_TOKEN;
    const digest = token === undefined ? undefined : adminTokenDigest(token);
    return async (req: Request, res: Response) => {
      if (digest === undefined) throw new AppError("NOT_FOUND", "Not found");
      const { adminToken } = parseInput(schema, req.body ?? {});
      // Digests of equal length, compared in constant time.
      if (!timingSafeEqual(Buffer.from(adminTokenDigest(adminToken), "hex"), Buffer.from(digest, "hex"))) {
        await deps.adminAuthFailures.count(req, res, "console");
        throw new AppError("UNAUTHORIZED", INVALID_ADMIN_TOKEN);
      }
      await answerNewSession(req, res, deps, { kind: "operator", adminTokenDigest: digest });
    };
  },
});

const getSessionRoute = defineRoute({
  ...base,
  method: "get",
  path: "/console/api/session",
  operationId: "getConsoleSession",
  failure: "Unable to read the session",
  summary: "The console session of this browser",
  security: "consoleSession",
  parameters: [
    {
      name: "optional",
      in: "query",
      required: false,
      description:
        "`true`: answer 204 with no body instead of 401 when no session is open, so that a page asking whether " +
        "it is signed in logs no failed request",
      schema: { type: "string", enum: ["true"] },
    },
  ],
  responses: {
    "200": { description: "The session (never the key or the token).", json: "ConsoleSession" },
    "204": { description: "No session is open (only with `optional=true`)." },
    "401": errorResponse(
      "No cookie, or its session ended (signed out, expired, key revoked), or more than one session cookie was sent.",
      NOT_SIGNED_IN,
      SEVERAL_SESSION_COOKIES,
    ),
  },
  handler: (deps: ConsoleSessionDeps) => {
    const digest = deps.config.ADMIN_TOKEN === undefined ? undefined : adminTokenDigest(deps.config.ADMIN_TOKEN);
    return async (req: Request, res: Response) => {
      res.setHeader("Cache-Control", "no-store");
      // The console's own check at load asks with optional=true: signed out is then an answer, not a failure.
      const notSignedIn = () => {
        if (req.query.optional === "true") res.status(204).end();
        else throw new AppError("UNAUTHORIZED", NOT_SIGNED_IN);
      };
      const id = readSessionCookie(req, res);
      const found = id === undefined ? undefined : await deps.sessions.read(id);
      if (id === undefined || found === undefined) return notSignedIn();
      if (found.kind === "operator") {
        if (found.adminTokenDigest !== digest) return notSignedIn();
        res.json(view(found));
        return;
      }
      const key = await deps.keys.byId(found.apiKeyId);
      const orgName = key && key.revokedAt === null ? await orgNameOf(deps.db, found.orgId) : undefined;
      if (!key || key.revokedAt !== null || key.orgId !== found.orgId || orgName === undefined) {
        await deps.sessions.end(id);
        return notSignedIn();
      }
      res.json(view(found, orgName));
    };
  },
});

const deleteSessionRoute = defineRoute({
  ...base,
  method: "delete",
  path: "/console/api/session",
  operationId: "deleteConsoleSession",
  failure: "Unable to sign out",
  summary: "Sign out of the console",
  description:
    "Ends at once every session the request's cookies name and clears the cookie; answers 204 also when there was none.",
  security: "consoleSession",
  responses: { "204": { description: "Signed out.", headers: ["Set-Cookie"] }, "403": crossSite },
  handler: (deps: ConsoleSessionDeps) => async (req: Request, res: Response) => {
    // With several cookies (one set elsewhere, see readSessionCookie), signing out ends them all.
    for (const id of sessionCookiesOf(req)) await deps.sessions.end(id);
    clearSessionCookie(req, res);
    res.status(204).end();
  },
});

/** The sign-ins: each behind the failed-login budget and with a JSON body. */
export const consoleSignInRoutes = [organizationSignInRoute, operatorSignInRoute];
/** Reading and ending the session: only the cookie. */
export const consoleSessionRoutes = [getSessionRoute, deleteSessionRoute];
