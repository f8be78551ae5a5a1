import {
  DEFAULT_FLOW_PERIOD_MS,
  deleteFlow,
  FLOW_KEY_INVALID,
  FLOW_PARALLELISM_RANGE,
  FLOW_PERIOD_RANGE,
  FLOW_RATE_RANGE,
  type FlowRecord,
  findFlow,
  flowNotFound,
  flowNotFoundMessage,
  listFlows,
  parseInput,
  pauseFlow,
  resumeFlow,
  setFlowLimits,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ResolvedApiDeps } from "../api-deps.ts";
import { BODY_RESPONSES, type Documented, defineRoute, errorResponse } from "../routing/route.ts";
import { FLOW_COUNTS_UNAVAILABLE, fromRedis } from "./admission-reads.ts";
import {
  FLOW_KEY_PARAMETER,
  type FlowWithCounts,
  flowKeyOfPath,
  isoOrNull,
  PauseFlowSchema,
  ResumeFlowSchema,
  SetFlowSchema,
  toFlow,
} from "./schemas.ts";

// Contract §10.2: an organization's flows, each a record in Postgres (its limits and its pause)
// that the workers read (with a short cache) and enforce in Redis, across every worker process.
// The counts of GET /api/flows/{flowKey} are what the workers publish there (admission-store.ts).

/** Where the flows API is mounted, behind the API key check. */
export const FLOWS_PATH = "/api/flows";

/** The examples of the sentences that name a flow key. */
const EXAMPLE_FLOW_KEY = "invoices";

const flowLimitReached: Documented<string> = (config) =>
  `Flow limit of ${config.MAX_FLOWS_PER_ORG} reached for this organization`;

const INVALID_KEY = errorResponse("The path's flow key is not one.", FLOW_KEY_INVALID);
const NO_SUCH_FLOW = errorResponse(
  "The organization has no record of this flow (it was never configured or paused, or was deleted).",
  flowNotFoundMessage(EXAMPLE_FLOW_KEY),
);
const LIMIT_REACHED = errorResponse(
  "Creating the flow's record would pass the organization's limit of flows (`MAX_FLOWS_PER_ORG`); nothing is written.",
  flowLimitReached,
);

/** Flows' records (of one organization) with what the workers hold back for each now, read from Redis at once. */
async function withCounts(deps: ResolvedApiDeps, orgId: string, flows: FlowRecord[]): Promise<FlowWithCounts[]> {
  const counts = await deps.admissionStore.flowCountsOf(
    orgId,
    flows.map((flow) => flow.flowKey),
  );
  return flows.map((flow) => {
    const count = counts.get(flow.flowKey);
    return {
      ...toFlow(flow),
      waiting: count?.waiting ?? 0,
      inFlight: count?.inFlight ?? 0,
      oldestWaitingSince: isoOrNull(count?.oldestWaitingSince),
    };
  });
}

const COUNTS =
  "`waiting` counts the due deliveries of the flow the workers hold back now (the flow is paused or at a " +
  "limit, or their destination is Unhealthy), `oldestWaitingSince` is when the longest-waiting one was due and " +
  "`inFlight` its attempts not answered yet, summed over every worker as they published them within the last " +
  "seconds.";

/** GET /api/flows: the organization's flows with their counts, by flow key. */
export const listFlowsRoute = defineRoute({
  method: "get",
  path: FLOWS_PATH,
  operationId: "listFlows",
  summary: "List flows with their waiting and in-flight counts",
  description:
    "Every flow of the organization that has a record (limits or a pause), by flow key; at most " +
    "`MAX_FLOWS_PER_ORG`. A flow key used by events or cron jobs without a record is not listed: it has no " +
    `limits. ${COUNTS}`,
  tag: "Flows",
  security: "apiKey",
  failure: "Unable to list the flows",
  responses: {
    "200": {
      description: "The flows.",
      json: { type: "array", items: { $ref: "#/components/schemas/FlowWithCounts" } },
    },
    "503": errorResponse("Redis, where the counts are kept, did not answer.", FLOW_COUNTS_UNAVAILABLE),
  },
  handler: (deps: ResolvedApiDeps) => async (_req: Request, res: Response) => {
    const flows = await listFlows(deps.db, res.locals.orgId);
    const body = await fromRedis(() => withCounts(deps, res.locals.orgId, flows), FLOW_COUNTS_UNAVAILABLE);
    res.json(body);
  },
});

/** GET /api/flows/{flowKey}: the flow's record with what it holds back now. */
export const getFlowRoute = defineRoute({
  method: "get",
  path: `${FLOWS_PATH}/{flowKey}`,
  operationId: "getFlow",
  summary: "Get a flow with its waiting and in-flight counts",
  description:
    `The flow's limits and pause, and what it holds back now. ${COUNTS} A flow without a record answers 404, even ` +
    "when events name it: it has no limits and no pause.",
  tag: "Flows",
  security: "apiKey",
  parameters: [FLOW_KEY_PARAMETER],
  failure: "Unable to read the flow",
  responses: {
    "200": { description: "The flow and its counts.", json: "FlowWithCounts" },
    "400": INVALID_KEY,
    "404": NO_SUCH_FLOW,
    "503": errorResponse("Redis, where the counts are kept, did not answer.", FLOW_COUNTS_UNAVAILABLE),
  },
  handler: (deps: ResolvedApiDeps) => async (req: Request, res: Response) => {
    const flowKey = flowKeyOfPath(req);
    const orgId = res.locals.orgId;
    const flow = await findFlow(deps.db, orgId, flowKey);
    if (!flow) throw flowNotFound(flowKey);
    const [counted] = await fromRedis(() => withCounts(deps, orgId, [flow]), FLOW_COUNTS_UNAVAILABLE);
    res.json(counted);
  },
});

/** PUT /api/flows/{flowKey}: creates the flow's record or replaces its limits. */
export const setFlowRoute = defineRoute({
  method: "put",
  path: `${FLOWS_PATH}/{flowKey}`,
  operationId: "setFlow",
  summary: "Configure a flow's limits",
  description:
    "Replaces the flow's limits as a whole: a field left out or null is no such limit (`periodMs`: " +
    `${DEFAULT_FLOW_PERIOD_MS} ms). A paused flow stays paused (\`pause\` and \`resume\` change that). Creates the ` +
    "flow's record when it has none, counted against `MAX_FLOWS_PER_ORG`. The workers apply a change within a few " +
    "seconds.",
  tag: "Flows",
  security: "apiKey",
  parameters: [FLOW_KEY_PARAMETER],
  body: { component: "SetFlowRequest", schema: () => SetFlowSchema },
  failure: "Unable to configure the flow",
  responses: {
    "200": { description: "The flow as stored.", json: "Flow" },
    "400": errorResponse(
      "The path's flow key or the body is invalid; one sentence names the first problem.",
      FLOW_KEY_INVALID,
      FLOW_RATE_RANGE,
      FLOW_PERIOD_RANGE,
      FLOW_PARALLELISM_RANGE,
      "Unknown field 'paused'",
    ),
    "403": LIMIT_REACHED,
    ...BODY_RESPONSES,
  },
  handler: (deps: ResolvedApiDeps, Schema) => async (req: Request, res: Response) => {
    const flowKey = flowKeyOfPath(req);
    const limits = parseInput(Schema, req.body ?? {});
    const flow = await setFlowLimits(
      deps.db,
      res.locals.orgId,
      flowKey,
      {
        rate: limits.rate ?? null,
        periodMs: limits.periodMs ?? DEFAULT_FLOW_PERIOD_MS,
        parallelism: limits.parallelism ?? null,
      },
      deps.clock.now(),
      deps.config.MAX_FLOWS_PER_ORG,
    );
    res.json(toFlow(flow));
  },
});

/** DELETE /api/flows/{flowKey}: removes the flow's record, its limits and its pause. */
export const deleteFlowRoute = defineRoute({
  method: "delete",
  path: `${FLOWS_PATH}/{flowKey}`,
  operationId: "deleteFlow",
  summary: "Delete a flow's limits and pause",
  description:
    "Removes the flow's record: its deliveries go without limits (a paused flow's waiting deliveries go, oldest " +
    "first), within a few seconds. Events and cron jobs keep their `flowKey`; configuring the flow again applies " +
    "to them. It no longer counts against `MAX_FLOWS_PER_ORG`.",
  tag: "Flows",
  security: "apiKey",
  parameters: [FLOW_KEY_PARAMETER],
  failure: "Unable to delete the flow",
  responses: {
    "204": { description: "Deleted." },
    "400": INVALID_KEY,
    "404": NO_SUCH_FLOW,
  },
  handler: (deps: ResolvedApiDeps) => async (req: Request, res: Response) => {
    const flowKey = flowKeyOfPath(req);
    if (!(await deleteFlow(deps.db, res.locals.orgId, flowKey))) throw flowNotFound(flowKey);
    res.status(204).end();
  },
});

/** POST /api/flows/{flowKey}/pause: no attempt of the flow starts until it is resumed. */
export const pauseFlowRoute = defineRoute({
  method: "post",
  path: `${FLOWS_PATH}/{flowKey}/pause`,
  operationId: "pauseFlow",
  summary: "Pause a flow",
  description:
    "From within a few seconds, no attempt of the flow starts: its due deliveries wait (they are not attempts and " +
    "do not fail; a `retry.maxAgeMs` still ends them). Attempts already started finish. A flow without a record " +
    "gets one (without limits), counted against `MAX_FLOWS_PER_ORG`. Pausing a paused flow changes nothing.",
  tag: "Flows",
  security: "apiKey",
  parameters: [FLOW_KEY_PARAMETER],
  body: { component: "PauseFlowRequest", schema: () => PauseFlowSchema, optional: true },
  failure: "Unable to pause the flow",
  responses: {
    "200": { description: "The flow, `paused: true`.", json: "Flow" },
    "400": errorResponse(
      "The path's flow key is not one, or the body has a field.",
      FLOW_KEY_INVALID,
      "Unknown field 'until'",
    ),
    "403": LIMIT_REACHED,
    ...BODY_RESPONSES,
  },
  handler: (deps: ResolvedApiDeps, Schema) => async (req: Request, res: Response) => {
    const flowKey = flowKeyOfPath(req);
    parseInput(Schema, req.body ?? {});
    const flow = await pauseFlow(deps.db, res.locals.orgId, flowKey, deps.clock.now(), deps.config.MAX_FLOWS_PER_ORG);
    res.json(toFlow(flow));
  },
});

/** POST /api/flows/{flowKey}/resume: the flow's waiting deliveries go, oldest first, under its limits. */
export const resumeFlowRoute = defineRoute({
  method: "post",
  path: `${FLOWS_PATH}/{flowKey}/resume`,
  operationId: "resumeFlow",
  summary: "Resume a paused flow",
  description:
    "Within a few seconds the flow's waiting deliveries go, oldest first, under its limits. Its limits stay. " +
    "Resuming a flow that is not paused changes nothing; a flow without a record answers 404 (nothing was paused).",
  tag: "Flows",
  security: "apiKey",
  parameters: [FLOW_KEY_PARAMETER],
  body: { component: "ResumeFlowRequest", schema: () => ResumeFlowSchema, optional: true },
  failure: "Unable to resume the flow",
  responses: {
    "200": { description: "The flow, `paused: false`.", json: "Flow" },
    "400": errorResponse(
      "The path's flow key is not one, or the body has a field.",
      FLOW_KEY_INVALID,
      "Unknown field 'until'",
    ),
    "404": NO_SUCH_FLOW,
    ...BODY_RESPONSES,
  },
  handler: (deps: ResolvedApiDeps, Schema) => async (req: Request, res: Response) => {
    const flowKey = flowKeyOfPath(req);
    parseInput(Schema, req.body ?? {});
    const flow = await resumeFlow(deps.db, res.locals.orgId, flowKey, deps.clock.now());
    if (!flow) throw flowNotFound(flowKey);
    res.json(toFlow(flow));
  },
});

/**
 * Contract §10.2: the flows API, in the order the router tries them and the document lists them. No
 * two share a method and path shape, so the order changes no answer.
 */
export const flowRoutes = [
  listFlowsRoute,
  getFlowRoute,
  setFlowRoute,
  deleteFlowRoute,
  pauseFlowRoute,
  resumeFlowRoute,
];
