import {
  type AdminDeps,
  addMember,
  createAccount,
  createApiKey,
  createOrganization,
  listApiKeys,
  listOrganizations,
  revokeApiKey,
  rotateApiKey,
  rotateSigningSecret,
} from "@punctual/core";
import { type NextFunction, type Request, type Response, Router } from "express";
import { failsWith } from "../middleware/errors.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";

const body = (req: Request): Record<string, unknown> =>
  req.body === undefined ? {} : (req.body as Record<string, unknown>);

const LIST_ORGANIZATIONS_PARAMETERS = new Set(["email"]);

/** Contract §2: the admin HTTP API, the same operations as the admin CLI. */
export function adminRoutes(deps: AdminDeps): Router {
  const router = Router();
  // Several answers carry a new API key or signing secret (organization create, key create and
  // rotate, secret rotate), shown once: no cache or proxy may keep a copy. The rest hold emails and
  // ids, so every admin answer says so rather than a list of routes that could miss a new one.
  router.use((_req: Request, res: Response, next: NextFunction) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  const failure = "Unable to complete the admin request";
  const route = (handler: (req: Request) => Promise<unknown>, status = 200) =>
    failsWith(failure, async (req: Request, res: Response) => {
      res.status(status).json(await handler(req));
    });

  router.post(
    "/accounts",
    route((req) => createAccount(deps, body(req) as never), 201),
  );
  router.post(
    "/organizations",
    route((req) => createOrganization(deps, body(req) as never), 201),
  );
  router.get(
    "/organizations",
    route((req) => {
      const { email } = singleValuedQuery(req.query, LIST_ORGANIZATIONS_PARAMETERS);
      return listOrganizations(deps, email === undefined ? {} : { email });
    }),
  );
  router.post(
    "/organizations/:orgId/members",
    route((req) => addMember(deps, { ...body(req), orgId: req.params.orgId } as never), 201),
  );
  router.post(
    "/organizations/:orgId/keys",
    route((req) => createApiKey(deps, { ...body(req), orgId: req.params.orgId } as never), 201),
  );
  router.get(
    "/organizations/:orgId/keys",
    route((req) => listApiKeys(deps, { orgId: String(req.params.orgId) })),
  );
  router.post(
    "/organizations/:orgId/signing-secret/rotate",
    route((req) => rotateSigningSecret(deps, { ...body(req), orgId: req.params.orgId } as never)),
  );
  router.post(
    "/keys/:keyId/revoke",
    route((req) => revokeApiKey(deps, { ...body(req), keyId: req.params.keyId } as never)),
  );
  router.post(
    "/keys/:keyId/rotate",
    route((req) => rotateApiKey(deps, { ...body(req), keyId: req.params.keyId } as never)),
  );
  return router;
}
