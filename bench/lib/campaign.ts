import { performance } from "node:perf_hooks";
import type { Receiver } from "./receiver.ts";
import { type DeliveryStats, quantile } from "./stats.ts";

// "A campaign": one burst of events sharing one instant, created through the API by
// POST /api/events/batch (`batches` requests of `batchSize`, one at a time, as a sender's script
// would) starting `leadMs` before that instant, against the same burst created `aheadMs` before
// it. Lateness is measured at the loopback receiver; the campaign's p99 is judged against the
// burst created ahead in the same run, so what is measured is what creating the events so close
// to their instant costs, not the burst itself.

export interface CampaignPlan {
  batches: number;
  batchSize: number;
  /** The campaign's first request starts this long before the shared instant. */
  leadMs: number;
  /** The reference burst's first request starts this long before its instant. */
  aheadMs: number;
  /** Pairs of runs (reference, campaign); the rows are the runs with the median p99. */
  repeat: number;
}

export interface CampaignRun extends DeliveryStats {
  /** From the first request sent to the last answer read, ms. */
  ingestMs: number;
  /** The instant − the last answer, ms (negative: the last answer came after the instant). */
  headroomMs: number;
  /** Each batch request's answer time, ms. */
  answersMs: number[];
  /** With repetitions: every run's p99 (this one is the median). */
  p99Runs: number[];
}

export interface CampaignResult {
  plan: CampaignPlan;
  ahead: CampaignRun;
  campaign: CampaignRun;
}

export interface CampaignDeps {
  /** The API's base URL and a key of the organization the events are created in. */
  base: string;
  apiKey: string;
  receiver: Receiver;
  log(message: string): void;
}

/** Creates the burst through the API from now on, due at `dueMs`, and measures its lateness. */
async function burst(deps: CampaignDeps, plan: CampaignPlan, dueMs: number, name: string) {
  await deps.receiver.reset();
  const scheduledTime = new Date(dueMs).toISOString();
  const dueById = new Map<string, number>();
  const answersMs: number[] = [];
  const started = performance.now();
  for (let b = 0; b < plan.batches; b++) {
    const events = Array.from({ length: plan.batchSize }, (_, i) => ({
      payload: JSON.stringify({ campaign: name, batch: b, i }),
      destination: deps.receiver.url,
      scheduledTime,
      labels: { campaign: name },
    }));
    const sent = performance.now();
    const response = await fetch(`${deps.base}/api/events/batch`, {
      method: "POST",
      headers: { "x-api-key": deps.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    const body = await response.text();
    answersMs.push(performance.now() - sent);
    // Creating took longer than the lead: the rest of the burst cannot be made, and counts as lost.
    if (response.status === 400 && Date.now() >= dueMs) {
      deps.log(`campaign: the instant passed after ${b} of ${plan.batches} batches were created`);
      break;
    }
    if (!response.ok) throw new Error(`POST /api/events/batch answered ${response.status}: ${body}`);
    const created = (JSON.parse(body) as { events: { id: string }[] }).events;
    for (const event of created) dueById.set(event.id, dueMs);
  }
  const ingestMs = performance.now() - started;
  const headroomMs = dueMs - Date.now();
  const n = plan.batches * plan.batchSize;
  const stats = await deps.receiver.collect(dueById, Math.max(0, dueMs - Date.now()) + 30_000 + n * 5);
  const notCreated = n - dueById.size;
  return { ...stats, n, lost: stats.lost + notCreated, ingestMs, headroomMs, answersMs };
}

/** The run with the median p99, and every run's p99. */
function median(runs: Omit<CampaignRun, "p99Runs">[]): CampaignRun {
  const sorted = [...runs].sort((a, b) => a.p99 - b.p99);
  const chosen = sorted[Math.floor((sorted.length - 1) / 2)] as Omit<CampaignRun, "p99Runs">;
  return {
    ...chosen,
    p99Runs: runs.map((r) => r.p99),
    lost: runs.reduce((sum, r) => sum + r.lost, 0),
    duplicated: runs.reduce((sum, r) => sum + r.duplicated, 0),
  };
}

export async function measureCampaign(deps: CampaignDeps, plan: CampaignPlan): Promise<CampaignResult> {
  const n = (plan.batches * plan.batchSize).toLocaleString("en-US");
  const ahead: Omit<CampaignRun, "p99Runs">[] = [];
  const campaign: Omit<CampaignRun, "p99Runs">[] = [];
  for (let run = 0; run < plan.repeat; run++) {
    deps.log(`campaign: ${n} events in ${plan.batches} batch calls, ${plan.aheadMs / 1000} s ahead (run ${run + 1})`);
    ahead.push(await burst(deps, plan, Date.now() + plan.aheadMs, `ahead-${run}`));
    deps.log(`campaign: the same, starting ${plan.leadMs / 1000} s before the instant (run ${run + 1})`);
    campaign.push(await burst(deps, plan, Date.now() + plan.leadMs, `campaign-${run}`));
    const last = campaign.at(-1);
    if (last) {
      deps.log(
        `campaign: ingest ${Math.round(last.ingestMs)} ms (batch p50 ${Math.round(
          quantile(
            [...last.answersMs].sort((a, b) => a - b),
            0.5,
          ),
        )} ms), p99 ${Math.round(last.p99)} ms against ${Math.round(ahead.at(-1)?.p99 ?? Number.NaN)} ms ahead`,
      );
    }
  }
  return { plan, ahead: median(ahead), campaign: median(campaign) };
}
