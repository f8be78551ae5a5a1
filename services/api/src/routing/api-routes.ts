import { queueDashboardRoute } from "../admin-ui/queue-dashboard.ts";
import { consoleRoutes } from "../console/console-routes.ts";
import { consoleSessionRoutes, consoleSignInRoutes } from "../console-session/session-routes.ts";
import { previewCronJobRoute } from "../cron-jobs/preview-cron-job.ts";
import { cronJobRoutes } from "../cron-jobs/routes.ts";
import { deliveryPolicyRoutes } from "../delivery-policy/default-policy-routes.ts";
import { destinationRoutes } from "../destinations/destination-routes.ts";
import { eventRoutes } from "../events/routes.ts";
import { flowRoutes } from "../flows/flow-routes.ts";
import { metricsRoute } from "../metrics/metrics-routes.ts";
import { docsRoutes } from "../openapi/docs-routes.ts";
import { openApiRoute } from "../openapi/openapi-route.ts";
import { adminRoutes } from "../routes/admin.ts";
import { healthRoutes } from "../routes/health.ts";
import { serviceHealthRoute } from "../routes/service-health.ts";
import { statsRoutes } from "../stats/routes.ts";
import { webhookRoutes } from "../webhooks/webhook-routes.ts";
import type { OperationDeclaration } from "./route.ts";

/**
 * Every endpoint the app serves, in the document's order. app.ts mounts the same declarations, group
 * by group, each behind its own middleware.
 */
export const API_ROUTES: readonly OperationDeclaration[] = [
  // Contract §3
  ...eventRoutes,
  // Contract §4
  ...cronJobRoutes,
  // Contract §10.1
  ...deliveryPolicyRoutes,
  // Contract §10.2
  ...flowRoutes,
  // Contract §10.3
  ...destinationRoutes,
  // Contract §10.5
  ...webhookRoutes,
  // For the console: cron preview and statistics
  previewCronJobRoute,
  ...statsRoutes,
  // Contract §2
  ...adminRoutes,
  // For the console: service health and its sessions
  serviceHealthRoute,
  ...consoleSignInRoutes,
  ...consoleSessionRoutes,
  // Contract §8
  openApiRoute,
  ...healthRoutes,
  metricsRoute,
  ...docsRoutes,
  queueDashboardRoute,
  ...consoleRoutes,
];
