import { performance } from "node:perf_hooks";
import { type AttemptOfEvent, claimEvents, createLogger, DAY_MS, loadConfig, recordAttempts } from "@punctual/core";
import { createDb } from "@punctual/db";
import { withClient } from "@punctual/db/testing";
import autocannon from "autocannon";
import pg from "pg";
import { createRetention } from "../../services/worker/src/maintenance/retention.ts";
import type { NodeProcess } from "./processes.ts";
import { insertApiKey, insertOrganization } from "./setup.ts";
import { quantile } from "./stats.ts";
import {
  insertVolumeRange,
  prepareVolumeSeed,
  VOLUME_BIG_ORG,
  VOLUME_LABELS,
  VOLUME_SEED_START,
  type VolumeSeedTimings,
  volumeCampaigns,
  volumeEventId,
  volumeShape,
} from "./volume-seed.ts";

// "Postgres at volume": the hot statements of the events lifecycle and the events API against a
// data set of millions of events and attempts (bench/lib/volume-seed.ts), and the retention task's
// deletions beside a load of creates.
//   - claim: `claimEvents` of 500 due Pending events of the big organization (fresh rows each time,
//     inserted beside the data set, not measured) → Queued;
//   - record: `recordAttempts` of those 500 (a successful attempt each) → Sent;
//   - list: GET /api/events, 1,000 rows of the big organization from a random time, without filter,
//     and Sent only within a 7-day range;
//   - labels and flows: GET /api/events?label=campaign:… (two campaigns, of 1 % and 0.04 % of the data
//     set, each due one event after another and written together) from a random time within it (the
//     small one from its start), ?label=customer:… (a
//     random customer of 1,000: about 2,000 events spread over the 60 days and the whole table) and
//     ?flowKey=… (a random flow of 100, about 20,000 events, spread alike), 1,000 rows each;
//   - get: GET /api/events/{id} of a random event of the big organization with its attempts;
//   - retention: the real retention run with its clock set so that the data set's first day lies past
//     the search window (its events and, by cascade, their attempts are deleted), while autocannon
//     POSTs events through the API; creates/s and p99 against the same load without it. The deleted
//     rows are put back afterwards, so the kept data set stays whole.

export interface VolumePlan {
  events: number;
  /** Keep the data set across runs (`punctual_volume_<migrations>_<events>`). */
  shared: boolean;
  /** Measured claim / record batches (after `warmup` unmeasured ones). */
  batches: number;
  warmup: number;
  batchSize: number;
  /** Requests of each GET measurement, one at a time. */
  requests: number;
  /** POST load: connections, and seconds of the run without retention. */
  connections: number;
  loadSeconds: number;
}

export interface Timing {
  runs: number;
  p50: number;
  p99: number;
  max: number;
}

export interface VolumeHttp extends Timing {
  requests: number;
  non2xx: number;
  errors: number;
  perSecond: number;
}

export interface VolumeResult {
  plan: VolumePlan;
  events: number;
  attempts: number;
  organizations: number;
  bigOrgEvents: number;
  /** Set when this run seeded the data set. */
  seedTimings?: VolumeSeedTimings;
  claim: Timing;
  record: Timing;
  listAll: VolumeHttp;
  listFiltered: VolumeHttp;
  /** GET /api/events?label=campaign:… of each campaign, from a random time within it. */
  listCampaigns: (VolumeHttp & { value: string; labelled: number })[];
  /** GET /api/events?label=… of a random customer, the first page. */
  listCustomer: VolumeHttp & { labelled: number };
  /** GET /api/events?flowKey=… of a random flow, the first page. */
  listFlow: VolumeHttp & { labelled: number };
  get: VolumeHttp & { historyLength: number };
  retention: {
    durationMs: number;
    eventsDeleted: number;
    attemptsDeleted: number;
    rowsPerSecond: number;
    batchSize: number;
    complete: boolean;
    /** Putting the deleted rows back afterwards (not measured load). */
    restoreMs: number;
  };
  createsAlone: VolumeHttp;
  createsDuringRetention: VolumeHttp;
}

export interface VolumeDeps {
  /** Starts `dist/api.js` on this database, as the other parts do. */
  startApi(name: string, databaseUrl: string): Promise<{ api: NodeProcess; base: string }>;
  log(message: string): void;
  /** Where the POSTed events are delivered (never: they are due in 30 min). */
  destination: string;
}

const timing = (values: number[]): Timing => {
  const sorted = [...values].sort((a, b) => a - b);
  return { runs: sorted.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1) ?? 0 };
};

interface Response {
  /** When it arrived (performance.now()). */
  at: number;
  ms: number;
  ok: boolean;
}

/** The responses that arrived within [from, to] (performance.now() times), as a load of that span. */
function within(responses: Response[], from: number, to: number): VolumeHttp {
  const inside = responses.filter((r) => r.at >= from && r.at <= to);
  const ok = inside.filter((r) => r.ok).length;
  return {
    ...timing(inside.map((r) => r.ms)),
    requests: inside.length,
    non2xx: inside.length - ok,
    errors: 0,
    perSecond: ok / ((to - from) / 1000),
  };
}

/**
 * An autocannon run that can be stopped early (`stop`), with every response time kept (and each
 * response's arrival in `responses`).
 */
function startCannon(options: autocannon.Options): {
  stop(): void;
  done: Promise<VolumeHttp>;
  responses: Response[];
} {
  const times: number[] = [];
  const responses: Response[] = [];
  let instance: autocannon.Instance | undefined;
  const done = new Promise<VolumeHttp>((resolve, reject) => {
    instance = autocannon(options, (error, result) => {
      if (error) return reject(error);
      resolve({
        ...timing(times),
        requests: result.requests.total,
        non2xx: result.non2xx,
        errors: result.errors + result.timeouts,
        perSecond: result["2xx"] / result.duration,
      });
    });
    instance.on("response", (_client, status, _bytes, responseTime) => {
      times.push(responseTime);
      responses.push({ at: performance.now(), ms: responseTime, ok: status >= 200 && status < 300 });
    });
  });
  return { stop: () => instance?.stop(), done, responses };
}

const random = (from: number, to: number) => from + Math.floor(Math.random() * (to - from));

export async function measureVolume(
  plan: VolumePlan,
  runDatabaseUrl: string,
  deps: VolumeDeps,
  cleanups: (() => Promise<unknown>)[],
): Promise<VolumeResult> {
  const { log } = deps;
  log(`volume: data set of ${plan.events.toLocaleString("en-US")} events with their attempts`);
  const seed = await prepareVolumeSeed(plan.events, plan.shared, runDatabaseUrl, log);
  if (seed.timings) log(`volume: seeded in ${(seed.timings.totalMs / 1000).toFixed(0)} s`);
  const shape = volumeShape(plan.events);
  const config = loadConfig({ ...process.env, DATABASE_URL: seed.url });
  const db = createDb(seed.url, { poolSize: 4 });
  cleanups.push(() => db.$disconnect());
  const client = new pg.Client({ connectionString: seed.url });
  await client.connect();
  cleanups.push(() => client.end());
  const apiKey = await insertApiKey(client, VOLUME_BIG_ORG);
  const load = await insertOrganization(client, "bench-volume-load");
  cleanups.push(() =>
    withClient(seed.url, async (c) => {
      await c.query("DELETE FROM api_keys WHERE org_id = $1", [VOLUME_BIG_ORG]);
      // Its events (the POSTed ones) go with it.
      await c.query("DELETE FROM organizations WHERE id = $1", [load.orgId]);
    }),
  );
  const { rows: bigRows } = await client.query<{ n: string }>("SELECT count(*) AS n FROM events WHERE org_id = $1", [
    VOLUME_BIG_ORG,
  ]);

  // Claim and record: fresh Pending rows of the big organization each batch, removed at the end.
  log(`volume: claimEvents and recordAttempts of ${plan.batchSize}, ${plan.warmup} + ${plan.batches}×`);
  const claims: number[] = [];
  const records: number[] = [];
  const runIds: string[] = [];
  cleanups.push(() => withClient(seed.url, (c) => c.query("DELETE FROM events WHERE id = ANY($1)", [runIds])));
  const maxAttempts = config.RETRY_DELAYS_MS.length + 1;
  for (let batch = 0; batch < plan.warmup + plan.batches; batch++) {
    const ids = Array.from({ length: plan.batchSize }, (_, i) => `evt_vrun${Date.now().toString(36)}b${batch}i${i}`);
    runIds.push(...ids);
    // Due just before the seed's now, among its latest Sent events.
    await client.query(
      `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, created_at, updated_at)
       SELECT id, $2, 'https://hooks.example.com/run', '{}', $3::timestamptz - (n * interval '1 second'), 'Pending', now(), now()
       FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n)`,
      [ids, VOLUME_BIG_ORG, new Date(shape.seedNow).toISOString()],
    );
    const started = performance.now();
    const claimed = await claimEvents(db, ids, new Date(shape.seedNow), new Date(), "bench");
    const claimedAt = performance.now();
    if (claimed.some((c) => c.kind !== "claimed")) throw new Error("claimEvents left events of the batch unclaimed");
    // At the data set's now: the retention run below must not find them past its history window.
    const attempts: AttemptOfEvent[] = ids.map((eventId) => ({
      eventId,
      at: new Date(shape.seedNow),
      responseStatus: 200,
      durationMs: 40,
      error: null,
      succeeded: true,
      maxAttempts,
      last: false,
    }));
    const recorded = await recordAttempts(db, attempts);
    const recordedAt = performance.now();
    if (recorded.some((r) => r.final !== "Sent")) throw new Error("recordAttempts did not end the batch as Sent");
    if (batch >= plan.warmup) {
      claims.push(claimedAt - started);
      records.push(recordedAt - claimedAt);
    }
  }

  const { api, base } = await deps.startApi("api-volume", seed.url);
  const headers = { "x-api-key": apiKey };
  const randomRequests = async (makePath: () => string, check: (body: unknown) => void): Promise<VolumeHttp> => {
    const first = await fetch(`${base}${makePath()}`, { headers });
    if (!first.ok) throw new Error(`GET answered ${first.status}: ${await first.text()}`);
    check(await first.json());
    return startCannon({
      url: base,
      connections: 1,
      amount: plan.requests,
      headers,
      requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: makePath() }) }],
    }).done;
  };
  const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
  const rowsOf = (what: string) => (body: unknown) => {
    const n = Array.isArray(body) ? body.length : -1;
    if (n !== 1_000) throw new Error(`${what} returned ${n} rows`);
  };
  // Starts far enough from the end for a full page (the big organization has 2 of every 5 events).
  const lastStart = VOLUME_SEED_START + (plan.events - 5_000) * shape.stepMs;
  log(`volume: GET /api/events, 1,000 rows, ${plan.requests} requests`);
  const listAll = await randomRequests(
    () => `/api/events?scheduledStartDate=${iso(random(VOLUME_SEED_START, lastStart))}`,
    rowsOf("GET /api/events"),
  );
  log(`volume: GET /api/events?status=Sent within 7 days, 1,000 rows, ${plan.requests} requests`);
  const sentEnd = VOLUME_SEED_START + shape.queuedFrom * shape.stepMs;
  const listFiltered = await randomRequests(() => {
    const start = random(VOLUME_SEED_START, sentEnd - 7 * DAY_MS);
    return `/api/events?status=Sent&scheduledStartDate=${iso(start)}&scheduledEndDate=${iso(start + 7 * DAY_MS)}`;
  }, rowsOf("GET /api/events?status=Sent"));
  // Labels and flows: the big organization's event n is g = 5 × (n div 2) + n mod 2.
  const labelled = async (label: string) => {
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM events WHERE org_id = $1 AND labels @> $2::jsonb",
      [VOLUME_BIG_ORG, label],
    );
    return Number(rows[0]?.n);
  };
  /** A page of `expected` rows (fewer than 1,000 only in a smoke run's small data set). */
  const rowsOfPage = (what: string, expected: number) => (body: unknown) => {
    const n = Array.isArray(body) ? body.length : -1;
    if (n !== Math.min(1_000, expected)) throw new Error(`${what} returned ${n} rows`);
  };
  const listCampaigns: VolumeResult["listCampaigns"] = [];
  for (const campaign of volumeCampaigns(plan.events)) {
    const first = VOLUME_SEED_START + campaign.from * shape.stepMs;
    // The last start leaving a full page: 1,000 of a campaign's events span 2,500 of the data set.
    const lastStart = Math.max(first, VOLUME_SEED_START + (campaign.to - 2_500) * shape.stepMs);
    log(
      `volume: GET /api/events?label=campaign:${campaign.value} (${campaign.events.toLocaleString("en-US")} events), a page of 1,000, ${plan.requests} requests`,
    );
    const http = await randomRequests(
      () => `/api/events?label=campaign:${campaign.value}&scheduledStartDate=${iso(random(first, lastStart))}`,
      rowsOfPage(`GET /api/events?label=campaign:${campaign.value}`, campaign.events),
    );
    const labelledEvents = await labelled(JSON.stringify({ campaign: campaign.value }));
    listCampaigns.push({ ...http, value: campaign.value, labelled: labelledEvents });
  }
  const customer = () => `cus${String(random(0, VOLUME_LABELS.customers)).padStart(4, "0")}`;
  const perCustomer = Math.floor((plan.events * 2) / 5 / VOLUME_LABELS.customers);
  log(
    `volume: GET /api/events?label=customer:… (a random one of ${VOLUME_LABELS.customers}), ${plan.requests} requests`,
  );
  const listCustomer = {
    ...(await randomRequests(
      () => `/api/events?label=customer:${customer()}`,
      rowsOfPage("GET /api/events?label=customer", perCustomer),
    )),
    labelled: await labelled(JSON.stringify({ customer: "cus0000" })),
  };
  const flow = () => `flow${String(random(0, VOLUME_LABELS.flows)).padStart(3, "0")}`;
  log(
    `volume: GET /api/events?flowKey=… (a random one of ${VOLUME_LABELS.flows}), 1,000 rows, ${plan.requests} requests`,
  );
  const { rows: flowRows } = await client.query<{ n: string }>(
    "SELECT count(*) AS n FROM events WHERE org_id = $1 AND flow_key = 'flow000'",
    [VOLUME_BIG_ORG],
  );
  const listFlow = {
    ...(await randomRequests(
      () => `/api/events?flowKey=${flow()}`,
      rowsOfPage("GET /api/events?flowKey", Math.floor(perCustomer * (VOLUME_LABELS.customers / VOLUME_LABELS.flows))),
    )),
    labelled: Number(flowRows[0]?.n),
  };
  log(`volume: GET /api/events/{id} with its history, ${plan.requests} requests`);
  // Big organization's events (g % 5 < 2) before the Queued ones: all have attempts.
  const randomBigEvent = () => volumeEventId(5 * random(0, Math.floor(shape.queuedFrom / 5)) + random(0, 2));
  let historyLength = 0;
  const getOne = await randomRequests(
    () => `/api/events/${randomBigEvent()}`,
    (body) => {
      historyLength = (body as { history?: unknown[] }).history?.length ?? 0;
      if (historyLength === 0) throw new Error("GET /api/events/{id} answered no history");
    },
  );

  // Creates alone, then beside the retention run.
  const post = () =>
    startCannon({
      url: `${base}/api/events`,
      method: "POST",
      connections: plan.connections,
      duration: 600,
      headers: { "x-api-key": load.apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        payload: '{"hello":"world"}',
        destination: deps.destination,
        scheduledTime: new Date(Date.now() + 1_800_000).toISOString(),
      }),
    });
  const timed = async (seconds: number) => {
    const run = post();
    setTimeout(() => run.stop(), seconds * 1000);
    return run.done;
  };
  log(`volume: POST /api/events, ${plan.connections} connections, ${plan.loadSeconds} s (warm-up 2 s first)`);
  await timed(2);
  const createsAlone = await timed(plan.loadSeconds);

  // Retention's clock: the seed's first day lies past the search window; no attempt is older than
  // the history window then (attempts go with their events).
  const retentionNow = new Date(VOLUME_SEED_START + DAY_MS + config.SEARCH_WINDOW_DAYS * DAY_MS);
  const cutoff = new Date(VOLUME_SEED_START + DAY_MS).toISOString();
  const counts = async () => {
    const { rows } = await client.query<{ events: string; attempts: string }>(
      `SELECT (SELECT count(*) FROM events WHERE status IN ('Sent', 'Failed To Send') AND scheduled_time < $1) AS events,
              (SELECT count(*) FROM event_attempts WHERE at < $1::timestamptz + interval '1 minute') AS attempts`,
      [cutoff],
    );
    return { events: Number(rows[0]?.events), attempts: Number(rows[0]?.attempts) };
  };
  const before = await counts();
  const retain = createRetention({
    db,
    clock: { now: () => retentionNow },
    config,
    logger: createLogger({ LOG_LEVEL: "silent" }, "retention"),
  });
  // Should the run stop half-way, the next one still finds the whole data set.
  let restored = false;
  const restore = async () => {
    if (restored) return;
    restored = true;
    await withClient(seed.url, (c) => insertVolumeRange(c, plan.events, 0, shape.firstDay + 1, true));
  };
  cleanups.push(restore);
  log(`volume: retention of the first day (${before.events.toLocaleString("en-US")} events) beside POST load`);
  const during = post();
  // The load reaches its pace before the deletions begin.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const retentionStarted = performance.now();
  const report = await retain();
  const retentionEnded = performance.now();
  const durationMs = retentionEnded - retentionStarted;
  during.stop();
  // Only the creates answered while the deletions ran; errors are those of the whole run.
  const duringRun = await during.done;
  const createsDuringRetention = {
    ...within(during.responses, retentionStarted, retentionEnded),
    errors: duringRun.errors,
  };
  const after = await counts();
  const eventsDeleted = before.events - after.events;
  const attemptsDeleted = before.attempts - after.attempts;
  await api.stop();

  log("volume: putting the first day back");
  const restoreStarted = performance.now();
  await restore();
  const restoreMs = performance.now() - restoreStarted;

  return {
    plan,
    events: seed.events,
    attempts: seed.attempts,
    organizations: 1_000,
    bigOrgEvents: Number(bigRows[0]?.n),
    seedTimings: seed.timings,
    claim: timing(claims),
    record: timing(records),
    listAll,
    listFiltered,
    listCampaigns,
    listCustomer,
    listFlow,
    get: { ...getOne, historyLength },
    retention: {
      durationMs,
      eventsDeleted,
      attemptsDeleted,
      rowsPerSecond: (eventsDeleted + attemptsDeleted) / (durationMs / 1000),
      batchSize: config.RETENTION_BATCH_SIZE,
      complete: report.complete,
      restoreMs,
    },
    createsAlone,
    createsDuringRetention,
  };
}
