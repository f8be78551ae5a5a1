import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPunctualClient, type Fetch, PunctualError } from "../../packages/client/src/index.ts";
import { TOO_MANY_REQUESTS } from "../../services/api/src/rate-limit/rate-limit.ts";
import { createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { type LiveApi, startLiveApi } from "../support/live-api.ts";

// The client against Punctual's own rate limiter, set low: 2 requests a minute per API key, then
// refused (429, Retry-After: 1) for a second. Each test uses an organization, so a key, of its own.

let context: TestContext;
let api: LiveApi;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "2", RATE_LIMIT_BLOCK_SECONDS: "1" });
  api = await startLiveApi(context);
});
afterAll(() => context?.close());

/** The global fetch, noting each answer's status and when it came: what went over the wire. */
function recordingFetch(): { fetch: Fetch; answers: { status: number; retryAfter: string | null; at: number }[] } {
  const answers: { status: number; retryAfter: string | null; at: number }[] = [];
  return {
    answers,
    fetch: async (request) => {
      const response = await fetch(request);
      answers.push({ status: response.status, retryAfter: response.headers.get("retry-after"), at: Date.now() });
      return response;
    },
  };
}

const event = () => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(Date.now() + 3_600_000),
});

describe("429 from Punctual's rate limiter", () => {
  it("the client waits the Retry-After second and sends the create again, which makes one event", async () => {
    const org = await createTestOrganization(context);
    const { fetch, answers } = recordingFetch();
    const client = createPunctualClient({ baseUrl: api.baseUrl, apiKey: org.apiKey, fetch });

    await client.events.create(event());
    await client.events.create(event());
    const third = await client.events.create(event());

    expect(answers.map(({ status, retryAfter }) => [status, retryAfter])).toEqual([
      [200, null],
      [200, null],
      [429, "1"],
      [200, null],
    ]);
    const [, , refused, retried] = answers;
    expect((retried?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThanOrEqual(990);
    // The refused request created nothing: three events for three calls.
    const stored = await context.db.event.findMany({ where: { orgId: org.orgId }, select: { id: true } });
    expect(stored).toHaveLength(3);
    expect(stored.map((row) => row.id)).toContain(third.id);
  });

  it("with retries off, the 429 is a PunctualError with the server's message and Retry-After", async () => {
    const org = await createTestOrganization(context);
    const { fetch, answers } = recordingFetch();
    const client = createPunctualClient({ baseUrl: api.baseUrl, apiKey: org.apiKey, fetch, retry: false });

    await client.cronJobs.list();
    await client.cronJobs.list();
    const error = await client.cronJobs.list().catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PunctualError);
    expect(error).toMatchObject({
      status: 429,
      message: TOO_MANY_REQUESTS,
      operation: "getManyCronJobs",
      retryAfterSeconds: 1,
    });
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429]);
  });
});
