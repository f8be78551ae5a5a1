import { createAdmissionStore } from "@punctual/core";
import express, { type Express, Router } from "express";
import { CROSS_SITE_REQUEST_REFUSED, refuseCrossSiteWrites } from "./admin-ui/browser-guards.ts";
import { queueDashboard } from "./admin-ui/queue-dashboard.ts";
import type { ApiDeps } from "./api-deps.ts";
import { consoleApp } from "./console/console-routes.ts";
import { refuseCrossSiteSessionWrites } from "./console-session/session-origin-guard.ts";
import { CONSOLE_API_PATH, consoleSessionRoutes, consoleSignInRoutes } from "./console-session/session-routes.ts";
import { apiKeySessionsOf, createConsoleSessions } from "./console-session/session-store.ts";
import { CRON_PREVIEW_PATH, previewCronJobRoute } from "./cron-jobs/preview-cron-job.ts";
import { CRON_JOBS_PATH, CRON_JOBS_PATHS, cronJobRoutes } from "./cron-jobs/routes.ts";
import { DELIVERY_POLICY_PATH, deliveryPolicyRoutes } from "./delivery-policy/default-policy-routes.ts";
import { DESTINATIONS_PATH, destinationRoutes } from "./destinations/destination-routes.ts";
import { batchBodyLimit } from "./events/create-events-batch.ts";
import { EVENTS_PATH, eventRoutes } from "./events/routes.ts";
import { FLOWS_PATH, flowRoutes } from "./flows/flow-routes.ts";
import { createApiMetrics } from "./metrics/api-metrics.ts";
import { httpMetrics } from "./metrics/http-metrics.ts";
import { metricsRoute } from "./metrics/metrics-routes.ts";
import { adminAuth } from "./middleware/admin-auth.ts";
import { apiKeyAuth, createApiKeyLookup } from "./middleware/api-key-auth.ts";
import { errorHandler, notFoundHandler } from "./middleware/errors.ts";
import { jsonBody } from "./middleware/json-body.ts";
import { requestContext } from "./middleware/request-context.ts";
import { docsRoutes } from "./openapi/docs-routes.ts";
import { createOpenApiDocument } from "./openapi/openapi-document.ts";
import { openApiRoute } from "./openapi/openapi-route.ts";
import { createAdminAuthFailures } from "./rate-limit/admin-auth-failures.ts";
import { createRateLimit } from "./rate-limit/rate-limit.ts";
import { adminRouter } from "./routes/admin.ts";
import { healthRoutes } from "./routes/health.ts";
import { serviceHealthRoute } from "./routes/service-health.ts";
import { routerFor } from "./routing/route-router.ts";
import { STATS_PATH, statsRoutes } from "./stats/routes.ts";
import { WEBHOOKS_PATH, webhookRoutes } from "./webhooks/webhook-routes.ts";

export type { ApiDeps } from "./api-deps.ts";

/**
 * Builds the Express app without listening, so tests can drive it with supertest. Each endpoint is
 * declared beside its handler (routing/route.ts); the same declarations make the routers mounted
 * here and the OpenAPI document.
 */
export function createApp(given: ApiDeps): Express {
  const deps = {
    ...given,
    admissionStore: given.admissionStore ?? createAdmissionStore(given.redis, given.config.QUEUE_PREFIX),
  };
  const app = express();
  app.disable("x-powered-by");
  // The client address (req.ip, the rate limits' subject) comes from X-Forwarded-For only through
  // the proxies the operator named in TRUST_PROXY; by default from the connection itself.
  app.set("trust proxy", deps.config.TRUST_PROXY);
  app.set("query parser", "simple");

  const metrics = deps.metrics ?? createApiMetrics();
  app.use(httpMetrics(metrics));
  app.use(requestContext(deps.logger));

  // Credentials are checked before a body is parsed: unauthenticated bodies are never read.
  const api = Router();
  // Contract §7: every /api request is counted, per API key or else per client address.
  const rateLimit = createRateLimit(deps);
  // One budget of failed admin logins per client address, for the admin API and Bull Board alike.
  const adminAuthFailures = createAdminAuthFailures({ ...deps, failuresTotal: metrics.adminAuthFailures });
  const openApiDocument = () => createOpenApiDocument(deps.config);
  // A console session cookie stands for an API key or the admin token.
  const sessions = createConsoleSessions(deps);
  const keys = createApiKeyLookup(deps.db);
  // A change made with the cookie must come from this origin; counted before it is refused.
  const sessionOriginGuard = refuseCrossSiteSessionWrites();
  api.use(
    routerFor([openApiRoute], { ...deps, openApiDocument }, { mountedAt: "/api", before: [rateLimit.byClientAddress] }),
  );
  api.use(
    "/admin",
    rateLimit.byClientAddress,
    // An operator's session cookie still works while the address is blocked (admin-auth-failures.ts).
    adminAuthFailures.refuseBlockedExceptSessions,
    adminAuth(deps.config.ADMIN_TOKEN, adminAuthFailures, sessions),
    sessionOriginGuard,
    jsonBody(),
    adminRouter({ db: deps.db, config: deps.config, clock: deps.clock, consoleSessions: apiKeySessionsOf(deps) }),
    routerFor([serviceHealthRoute], deps, { mountedAt: "/api/admin" }),
  );
  // A blocked client is refused on Redis alone, before its key costs a lookup in Postgres.
  api.use(
    rateLimit.beforeKeyLookup,
    apiKeyAuth({ db: deps.db, clock: deps.clock, keys, sessions }),
    rateLimit.byApiKey,
    sessionOriginGuard,
    jsonBody(batchBodyLimit),
  );
  api.use(rateLimit.afterRefusedKey);
  api.use("/events", routerFor(eventRoutes, deps, { mountedAt: EVENTS_PATH }));
  // The preview first: after the collection's routes, `preview` would be read as a cron job's id.
  api.use(CRON_JOBS_PATHS, routerFor([previewCronJobRoute], deps, { mountedAt: CRON_PREVIEW_PATH }));
  api.use(CRON_JOBS_PATHS, routerFor(cronJobRoutes, deps, { mountedAt: CRON_JOBS_PATH }));
  api.use("/stats", routerFor(statsRoutes, deps, { mountedAt: STATS_PATH }));
  api.use("/delivery-policy", routerFor(deliveryPolicyRoutes, deps, { mountedAt: DELIVERY_POLICY_PATH }));
  api.use("/flows", routerFor(flowRoutes, deps, { mountedAt: FLOWS_PATH }));
  api.use("/destinations", routerFor(destinationRoutes, deps, { mountedAt: DESTINATIONS_PATH }));
  api.use("/webhooks", routerFor(webhookRoutes, deps, { mountedAt: WEBHOOKS_PATH }));
  // Before the other routes, as nearly every request is an API call; no other route is under /api,
  // so the order changes no answer.
  app.use("/api", api);
  app.use(routerFor(healthRoutes, deps));
  app.use(routerFor([metricsRoute], { ...deps, metrics }));
  app.use(routerFor(docsRoutes, deps));
  // The console's sign-in and session routes, before the console's pages: counted per client
  // address; the sign-ins also spend the failed-login budget, refuse other sites' pages, and read a
  // JSON body only once the client is known not to be blocked.
  const consoleDeps = { ...deps, sessions, keys, adminAuthFailures };
  const signInGuards = [
    rateLimit.byClientAddress,
    refuseCrossSiteWrites(CROSS_SITE_REQUEST_REFUSED),
    adminAuthFailures.refuseBlocked,
    jsonBody(),
  ];
  app.use(
    CONSOLE_API_PATH,
    routerFor(consoleSignInRoutes, consoleDeps, { mountedAt: CONSOLE_API_PATH, before: signInGuards }),
    routerFor(consoleSessionRoutes, consoleDeps, {
      mountedAt: CONSOLE_API_PATH,
      before: [rateLimit.byClientAddress, refuseCrossSiteWrites(CROSS_SITE_REQUEST_REFUSED)],
    }),
  );
  // The web console's page and files; its JSON API under /console/api is not served here.
  app.use(consoleApp());
  app.use(queueDashboard({ ...deps, adminAuthFailures }));

  app.use(notFoundHandler());
  app.use(errorHandler());
  return app;
}
