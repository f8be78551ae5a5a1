import { get, post, put, request, withQuery } from "../../api/client.ts";
import type { Flow, FlowWithCounts, SetFlowRequest } from "../../api/types.ts";

// The calls of the Flows page (contract §10.2), with the console's session.

const flowPath = (flowKey: string) => `/api/flows/${encodeURIComponent(flowKey)}`;

/** The Flows page's address, with a flow picked out (from an event or a cron job that names it). */
export const flowsPageOf = (flowKey?: string) => withQuery("/flows", { flow: flowKey });

/** The organization's flows with what each holds back now, by flow key. */
export const listFlows = () => get<FlowWithCounts[]>("/api/flows");

/** Pauses a flow (`paused`) or resumes it; the answer is the flow as it is now. */
export const setFlowPaused = (flowKey: string, paused: boolean) =>
  post<Flow>(`${flowPath(flowKey)}/${paused ? "pause" : "resume"}`);

/** What a flow's Pause / Resume button does: pauses a running flow, resumes a paused one. */
export const pauseOrResume = (flow: Pick<Flow, "flowKey" | "paused">) => setFlowPaused(flow.flowKey, !flow.paused);

/** Creates a flow's record or replaces its limits as a whole (a limit left out or null: none). */
export const saveFlowLimits = (flowKey: string, limits: SetFlowRequest) => put<Flow>(flowPath(flowKey), limits);

/** Removes a flow's record: its limits and its pause. */
export async function deleteFlow(flowKey: string): Promise<void> {
  await request("DELETE", flowPath(flowKey));
}
