import { systemClock } from "@punctual/core";
import { createWorker, type DeliveryWorker } from "@punctual/worker";
import { createTestContext, createTestOrganization, type TestContext, type TestOrganization } from "./context.ts";
import { type Receiver, type ReceiverOptions, startTestReceiver } from "./receiver.ts";

// Delivery workers in the test's own process, on a test context's database and queues.

/**
 * A worker on the context, started; it stops when the context closes. Its /healthz listens on the
 * context's WORKER_HEALTH_PORT: "0" in the context's settings gives it a free port.
 */
export async function startTestWorker(context: TestContext): Promise<DeliveryWorker> {
  const { config, db, redis, logger } = context;
  const worker = createWorker({ config, db, redis, logger, clock: systemClock });
  context.onClose(() => worker.stop());
  await worker.start();
  return worker;
}

export interface DeliveryContext {
  context: TestContext;
  org: TestOrganization;
  receiver: Receiver;
  worker: DeliveryWorker;
}

/**
 * A test context with `settings` where deliveries happen: an organization, a receiver on loopback
 * answering as `receiver` says, and a worker delivering to it (its /healthz on a free port),
 * started. All of it closes with the context.
 */
export async function createDeliveryContext(
  settings: Record<string, string> = {},
  receiver: ReceiverOptions = {},
): Promise<DeliveryContext> {
  const context = await createTestContext({ WORKER_HEALTH_PORT: "0", ...settings });
  try {
    const org = await createTestOrganization(context);
    const started = await startTestReceiver(context, receiver);
    return { context, org, receiver: started, worker: await startTestWorker(context) };
  } catch (error) {
    await context.close();
    throw error;
  }
}
