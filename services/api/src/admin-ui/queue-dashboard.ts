import { type Config, eventQueuePrefixes, QUEUE_NAMES, type QueueName, type Redis } from "@punctual/core";
import { Queue } from "bullmq";
import { type Express, type NextFunction, type Request, type RequestHandler, type Response, Router } from "express";
import type { AdminAuthFailures } from "../rate-limit/admin-auth-failures.ts";
import { TOO_MANY_REQUESTS } from "../rate-limit/rate-limit.ts";
import { documentRoute, errorResponse } from "../routing/route.ts";
import { adminCredentials, CREDENTIALS_REQUIRED } from "./admin-credentials.ts";
import { CROSS_SITE_WRITE_REFUSED, noFraming, refuseCrossSiteWrites } from "./browser-guards.ts";
import { dashboardContentSecurityPolicy, localOnlyEngine } from "./dashboard-page.ts";

/** Where Bull Board is mounted (contract §8). */
export const QUEUE_DASHBOARD_PATH = "/admin/queues";

const DESCRIPTIONS: Record<QueueName, string> = {
  events: "Delayed jobs, one per Pending event, due at its scheduled time",
  cron: "Job schedulers, one per Active cron job; each firing is one job",
  maintenance: "Reconciler, retention and failure notices",
};

/**
 * The dashboard's declaration, for the document only: Bull Board is an Express app of its own,
 * mounted below with its guards (it serves its assets and JSON calls under the same path), so it
 * is not a handler a router could mount from a declaration.
 */
export const queueDashboardRoute = documentRoute({
  method: "get",
  path: QUEUE_DASHBOARD_PATH,
  operationId: "getQueueDashboard",
  summary: "Bull Board: the queues (HTML)",
  description:
    "HTTP Basic (any user name, the password is `ADMIN_TOKEN`) or `Authorization: Bearer ADMIN_TOKEN`. " +
    "The dashboard's own assets and JSON calls live under this path too.",
  tag: "Operations",
  security: "adminUi",
  responses: {
    "200": { description: "The dashboard.", content: { "text/html": { schema: { type: "string" } } } },
    "401": {
      description: "No or wrong credentials; `WWW-Authenticate` makes a browser ask for them.",
      json: "Error",
      headers: ["WWW-Authenticate"],
      messages: [CREDENTIALS_REQUIRED],
    },
    "403": errorResponse(
      "A change (any method but GET, HEAD and OPTIONS) sent from another site (`Origin`, `Sec-Fetch-Site`).",
      CROSS_SITE_WRITE_REFUSED,
    ),
    "404": errorResponse("No `ADMIN_TOKEN` is configured, so the dashboard does not exist.", "Not found"),
    "429": {
      description:
        "This client address is blocked after `ADMIN_AUTH_FAILURES_PER_MINUTE` wrong admin tokens; `Retry-After` says when to try again.",
      json: "Error",
      messages: [TOO_MANY_REQUESTS],
      headers: ["Retry-After"],
    },
  },
});

export interface QueueDashboardDeps {
  config: Pick<Config, "ADMIN_TOKEN" | "QUEUE_PREFIX" | "QUEUE_SHARDS">;
  redis: Redis;
  /** Failed logins, counted with the admin API's in one budget per client address. */
  adminAuthFailures: AdminAuthFailures;
}

/**
 * Bull Board over every queue of the deployment, behind the admin credentials. Without an
 * `ADMIN_TOKEN` it is not mounted at all, so the path answers 404 like any unknown route: the
 * dashboard is never open. Postgres stays the truth: a job removed here is put back by the
 * reconciler while its event or cron job still needs it. Every answer forbids framing and loading
 * anything from another origin; a blocked client is refused before its credentials are compared,
 * and cross-site writes before they act.
 */
export function queueDashboard(deps: QueueDashboardDeps): Router {
  const router = Router();
  const token = deps.config.ADMIN_TOKEN;
  if (token === undefined) return router;

  // Built on the first authorized request: an app that never shows the dashboard opens no queues
  // and never loads Bull Board's modules (a few MB of memory in every API process otherwise).
  let loading: Promise<RequestHandler> | undefined;
  const bullBoard = async (req: Request, res: Response, next: NextFunction) => {
    let board: RequestHandler;
    try {
      loading ??= createBoard(deps);
      board = await loading;
    } catch (error) {
      loading = undefined;
      return next(error);
    }
    // Bull Board is an Express app of its own and gives requests its own prototypes; a request it
    // passes on (next) gets this app's back, as Express does for a sub-app mounted with app.use.
    const requestPrototype: object = Object.getPrototypeOf(req);
    const responsePrototype: object = Object.getPrototypeOf(res);
    board(req, res, (error?: unknown) => {
      Object.setPrototypeOf(req, requestPrototype);
      Object.setPrototypeOf(res, responsePrototype);
      next(error);
    });
  };
  router.use(
    QUEUE_DASHBOARD_PATH,
    // Every answer, the 401 included: a browser shows that one too.
    noFraming(dashboardContentSecurityPolicy()),
    deps.adminAuthFailures.refuseBlocked,
    refuseCrossSiteWrites(),
    adminCredentials(token, deps.adminAuthFailures),
    bullBoard,
  );
  return router;
}

async function createBoard(deps: QueueDashboardDeps): Promise<RequestHandler> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import("@bull-board/api"),
    import("@bull-board/api/bullMQAdapter"),
    import("@bull-board/express"),
  ]);
  const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  const shardPrefixes = eventQueuePrefixes(deps.config);
  const queues = Object.values(QUEUE_NAMES).flatMap((name) =>
    name === QUEUE_NAMES.events && shardPrefixes.length > 1
      ? // Every shard's event queue, each under a name of its own ("shard-0.events", …): Bull Board
        // tells queues apart by name, and the shards share theirs.
        shardPrefixes.map(
          (prefix, shard) =>
            new BullMQAdapter(new Queue(name, { connection: deps.redis, prefix }), {
              description: `${DESCRIPTIONS[name]} (shard ${shard}, keys under ${prefix})`,
              prefix: `shard-${shard}.`,
            }),
        )
      : [
          new BullMQAdapter(new Queue(name, { connection: deps.redis, prefix: deps.config.QUEUE_PREFIX }), {
            description: DESCRIPTIONS[name],
          }),
        ],
  );
  createBullBoard({
    queues,
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: "Punctual queues",
        miscLinks: [{ text: "API reference", url: "/docs" }],
      },
    },
  });
  // ExpressAdapter types its router as `any`; it is an Express app of its own, which would announce
  // itself in `X-Powered-By` on every answer it handles (this app's setting does not reach it).
  const board = serverAdapter.getRouter() as Express;
  board.disable("x-powered-by");
  // Bull Board's page without its links to a font service (dashboard-page.ts).
  board.engine("ejs", localOnlyEngine());
  return board;
}
