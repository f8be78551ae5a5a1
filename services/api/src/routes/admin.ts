import {
  AddMemberInputSchema,
  type AdminDeps,
  addMember,
  CreateAccountInputSchema,
  CreateOrganizationInputSchema,
  createAccount,
  createApiKey,
  createOrganization,
  endSigningSecretOverlap,
  keyId,
  listApiKeys,
  listMembers,
  listOrganizations,
  orgId,
  RotateSecretInputSchema,
  revokeApiKey,
  rotateApiKey,
  rotateSigningSecret,
} from "@punctual/core";
import { type NextFunction, type Request, type Response, Router } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";
import { pathParameter } from "../routing/parameters.ts";
import { BODY_RESPONSES, defineRoute, errorResponse, type Route } from "../routing/route.ts";
import { routerFor } from "../routing/route-router.ts";

// Contract §2: the admin HTTP API, the same operations as the admin CLI. The operations validate
// their input themselves (with the schemas declared as the request bodies here), so both surfaces
// answer with the same words.

/** Where the admin API is mounted, behind the admin token check. */
export const ADMIN_PATH = "/api/admin";

const FAILURE = "Unable to complete the admin request";

const body = (req: Request): Record<string, unknown> =>
  req.body === undefined ? {} : (req.body as Record<string, unknown>);

/** A handler answering `status` with the operation's result as JSON. */
const answering =
  (status: number, operation: (req: Request) => Promise<unknown>) => async (req: Request, res: Response) => {
    res.status(status).json(await operation(req));
  };

const ORG_ID = pathParameter("orgId", "The organization's id (`org_…`)", orgId);
const KEY_ID = pathParameter("keyId", "The API key's id (`key_…`)", keyId);

const conflict = (message: string) => errorResponse("It exists already.", message);

// The messages of the operations' own validation (packages/core/src/organizations/schemas.ts), as
// each route can answer them: services/api/test/openapi-examples.test.ts sends a request for every
// 400 example of the document and checks the route answers exactly that.
const INVALID_EMAIL = "'email' must be a valid email address";
const UNKNOWN_FIELD = "Unknown field 'plan'";
const NOT_AN_ORG_ID = "'orgId' must be an organization id (org_…)";
const NOT_A_KEY_ID = "'keyId' must be an API key id (key_…)";
const BAD_SIGNING_SECRET =
  "'signingSecret' must be 'whsec_' followed by padded base64 of at least 24 bytes, or any text of at least 24 characters";
/**
 * The 400 of a route whose input is its path's organization id. With `readsBody`, the handler also
 * hands the body to the operation, whose input is strict: a body with a field is refused, although
 * the route takes none.
 */
const badOrgId = (readsBody: boolean) =>
  readsBody
    ? errorResponse(
        "The path's id is not an organization id, or a body was sent with a field.",
        NOT_AN_ORG_ID,
        UNKNOWN_FIELD,
      )
    : errorResponse("The path's id is not an organization id.", NOT_AN_ORG_ID);
const orgMissing = errorResponse("No such organization.", "Unable to find organization");
const keyMissing = errorResponse("No such API key.", "Unable to find API key");
const base = { tag: "Admin", security: "admin", failure: FAILURE } as const;
const arrayOf = (component: string) => ({ type: "array", items: { $ref: `#/components/schemas/${component}` } });

const createAccountRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/accounts",
  operationId: "adminCreateAccount",
  summary: "Create an account",
  body: { component: "CreateAccountRequest", schema: () => CreateAccountInputSchema },
  responses: {
    "201": { description: "The account.", json: "Account" },
    "400": errorResponse("The body is invalid.", "'email' is required", INVALID_EMAIL, UNKNOWN_FIELD),
    "409": conflict("An account with email someone@example.com already exists"),
    ...BODY_RESPONSES,
  },
  handler: (deps: AdminDeps) => answering(201, (req) => createAccount(deps, body(req) as never)),
});

const createOrganizationRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/organizations",
  operationId: "adminCreateOrganization",
  summary: "Create an organization with its first API key and signing secret",
  description: "The owner's account is created when missing. The key and the secret are shown once.",
  body: { component: "CreateOrganizationRequest", schema: () => CreateOrganizationInputSchema },
  responses: {
    "201": { description: "The organization's ids, API key and signing secret.", json: "CreatedOrganization" },
    "400": errorResponse(
      "The body is invalid.",
      INVALID_EMAIL,
      "'name' must not be empty",
      "'name' must not contain invisible characters such as zero-width spaces, joiners or byte order marks",
      BAD_SIGNING_SECRET,
      UNKNOWN_FIELD,
    ),
    "403": errorResponse(
      "The account owns its maximum of organizations.",
      (config) => `Organization limit of ${config.MAX_ORGS_PER_ACCOUNT} reached for this account`,
    ),
    ...BODY_RESPONSES,
  },
  handler: (deps: AdminDeps) => answering(201, (req) => createOrganization(deps, body(req) as never)),
});

const LIST_ORGANIZATIONS_PARAMETERS = new Set(["email"]);

const listOrganizationsRoute = defineRoute({
  ...base,
  method: "get",
  path: "/api/admin/organizations",
  operationId: "adminListOrganizations",
  summary: "List organizations",
  parameters: [
    {
      name: "email",
      in: "query",
      required: false,
      description: "Only the organizations this account is a member of",
      schema: { type: "string", format: "email" },
    },
  ],
  responses: {
    "200": { description: "The organizations, oldest first.", json: arrayOf("Organization") },
    "400": errorResponse(
      "A query parameter is unknown, given more than once, or not an email address.",
      "Query parameter 'email' must be given only once",
      "Unknown query parameter 'mail'",
      INVALID_EMAIL,
    ),
  },
  handler: (deps: AdminDeps) =>
    answering(200, (req) => {
      const { email } = singleValuedQuery(req.query, LIST_ORGANIZATIONS_PARAMETERS);
      return listOrganizations(deps, email === undefined ? {} : { email });
    }),
});

const addMemberRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/organizations/{orgId}/members",
  operationId: "adminAddMember",
  summary: "Add a member to an organization",
  parameters: [ORG_ID],
  body: { component: "AddMemberRequest", schema: () => AddMemberInputSchema.omit({ orgId: true }) },
  responses: {
    "201": { description: "The membership.", json: "Member" },
    "400": errorResponse(
      "The path's id is not an organization id, or the body is invalid.",
      NOT_AN_ORG_ID,
      INVALID_EMAIL,
      UNKNOWN_FIELD,
    ),
    "404": orgMissing,
    "409": conflict("someone@example.com is already a member of org_…"),
    ...BODY_RESPONSES,
  },
  handler: (deps: AdminDeps) =>
    answering(201, (req) => addMember(deps, { ...body(req), orgId: req.params.orgId } as never)),
});

const listMembersRoute = defineRoute({
  ...base,
  method: "get",
  path: "/api/admin/organizations/{orgId}/members",
  operationId: "adminListMembers",
  summary: "List an organization's members",
  parameters: [ORG_ID],
  responses: {
    "200": { description: "The accounts of the organization, the owner first.", json: arrayOf("Membership") },
    "400": badOrgId(false),
    "404": orgMissing,
  },
  handler: (deps: AdminDeps) => answering(200, (req) => listMembers(deps, { orgId: String(req.params.orgId) })),
});

const createApiKeyRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/organizations/{orgId}/keys",
  operationId: "adminCreateApiKey",
  summary: "Create an API key",
  parameters: [ORG_ID],
  responses: {
    "201": { description: "The new key, shown once.", json: "CreatedApiKey" },
    "400": badOrgId(true),
    "404": orgMissing,
  },
  handler: (deps: AdminDeps) =>
    answering(201, (req) => createApiKey(deps, { ...body(req), orgId: req.params.orgId } as never)),
});

const listApiKeysRoute = defineRoute({
  ...base,
  method: "get",
  path: "/api/admin/organizations/{orgId}/keys",
  operationId: "adminListApiKeys",
  summary: "List an organization's API keys (never the keys themselves)",
  parameters: [ORG_ID],
  responses: {
    "200": { description: "The keys, oldest first.", json: arrayOf("ApiKey") },
    "400": badOrgId(false),
    "404": orgMissing,
  },
  handler: (deps: AdminDeps) => answering(200, (req) => listApiKeys(deps, { orgId: String(req.params.orgId) })),
});

const rotateSigningSecretRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/organizations/{orgId}/signing-secret/rotate",
  operationId: "adminRotateSigningSecret",
  summary: "Rotate the signing secret (generated unless one is given)",
  description:
    "The replaced secret keeps signing deliveries until `previousSecretValidUntil` (`SIGNING_SECRET_OVERLAP_MS` after the rotation): " +
    "`webhook-signature` carries a signature with each secret and `X-Jiter-Signature` one with the replaced " +
    "secret, so receivers can switch at their own pace. A secret replaced earlier is dropped.",
  parameters: [ORG_ID],
  body: { component: "RotateSigningSecretRequest", schema: () => RotateSecretInputSchema.omit({ orgId: true }) },
  responses: {
    "200": {
      description: "The new secret, and until when the replaced one still signs.",
      json: "RotatedSigningSecret",
    },
    "400": errorResponse(
      "The path's id is not an organization id, or the body is invalid.",
      NOT_AN_ORG_ID,
      BAD_SIGNING_SECRET,
      UNKNOWN_FIELD,
    ),
    "404": orgMissing,
    ...BODY_RESPONSES,
  },
  handler: (deps: AdminDeps) =>
    answering(200, (req) => rotateSigningSecret(deps, { ...body(req), orgId: req.params.orgId } as never)),
});

const endSigningSecretOverlapRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/organizations/{orgId}/signing-secret/end-overlap",
  operationId: "adminEndSigningSecretOverlap",
  summary: "End a signing-secret rotation's overlap now",
  description:
    "The replaced secret stops signing: deliveries from now on carry signatures with the current secret only. " +
    "Without an overlap under way it changes nothing.",
  parameters: [ORG_ID],
  responses: {
    "200": { description: "The overlap is over.", json: "EndedSigningSecretOverlap" },
    "400": badOrgId(false),
    "404": orgMissing,
  },
  handler: (deps: AdminDeps) =>
    answering(200, (req) => endSigningSecretOverlap(deps, { orgId: String(req.params.orgId) })),
});

const revokeApiKeyRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/keys/{keyId}/revoke",
  operationId: "adminRevokeApiKey",
  summary: "Revoke an API key; it stops working at once",
  parameters: [KEY_ID],
  responses: {
    "200": { description: "When the key was revoked.", json: "RevokedApiKey" },
    "400": errorResponse(
      "The path's id is not an API key id, or a body was sent with a field.",
      NOT_A_KEY_ID,
      UNKNOWN_FIELD,
    ),
    "404": keyMissing,
  },
  handler: (deps: AdminDeps) =>
    answering(200, (req) => revokeApiKey(deps, { ...body(req), keyId: req.params.keyId } as never)),
});

const rotateApiKeyRoute = defineRoute({
  ...base,
  method: "post",
  path: "/api/admin/keys/{keyId}/rotate",
  operationId: "adminRotateApiKey",
  summary: "Replace an API key by a new one",
  parameters: [KEY_ID],
  responses: {
    "200": { description: "The new key, shown once; the old one stopped working.", json: "RotatedApiKey" },
    "400": errorResponse(
      "The key is revoked already, the path's id is not an API key id, or a body was sent with a field.",
      "A revoked API key cannot be rotated; create a new key instead",
      NOT_A_KEY_ID,
      UNKNOWN_FIELD,
    ),
    "404": keyMissing,
  },
  handler: (deps: AdminDeps) =>
    answering(200, (req) => rotateApiKey(deps, { ...body(req), keyId: req.params.keyId } as never)),
});

/** The admin API, in the order the router tries them and the document lists them. */
export const adminRoutes: Route<AdminDeps>[] = [
  createAccountRoute,
  createOrganizationRoute,
  listOrganizationsRoute,
  addMemberRoute,
  createApiKeyRoute,
  listApiKeysRoute,
  listMembersRoute,
  rotateSigningSecretRoute,
  endSigningSecretOverlapRoute,
  revokeApiKeyRoute,
  rotateApiKeyRoute,
];

/** The admin API's router, mounted at /api/admin behind the admin token check. */
export function adminRouter(
  deps: Pick<ApiDeps, "db" | "config" | "clock"> & Required<Pick<AdminDeps, "consoleSessions">>,
): Router {
  const router = Router();
  // Several answers carry a new API key or signing secret (organization create, key create and
  // rotate, secret rotate), shown once: no cache or proxy may keep a copy. The rest hold emails and
  // ids, so every admin answer says so rather than a list of routes that could miss a new one.
  router.use((_req: Request, res: Response, next: NextFunction) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  router.use(routerFor(adminRoutes, deps, { mountedAt: ADMIN_PATH }));
  return router;
}
