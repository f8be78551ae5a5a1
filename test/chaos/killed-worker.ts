import type { ServiceProcess } from "../support/processes.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

/** A receiver answering after `answerMs`, which counts the requests that have arrived and not been answered. */
export async function startCountingReceiver(
  answerMs: number,
): Promise<{ receiver: Receiver; unanswered: () => number }> {
  let unanswered = 0;
  const receiver = await startReceiver({
    mount: (app) =>
      app.use((_req, res, next) => {
        unanswered += 1;
        res.on("close", () => {
          unanswered -= 1;
        });
        setTimeout(next, answerMs);
      }),
  });
  return { receiver, unanswered: () => unanswered };
}

/** Resolves with the signal that ended the worker process (null when it exited on its own). */
export const exitSignal = (worker: ServiceProcess) =>
  new Promise<NodeJS.Signals | null>((resolve) => {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) resolve(worker.child.signalCode);
    else worker.child.once("exit", (_code, signal) => resolve(signal));
  });
