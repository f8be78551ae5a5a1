/**
 * Gathers the single calls made during one turn of the event loop into one batch call, so that many
 * concurrent deliveries share one database round trip and one commit instead of one each.
 */
interface Batcher<I, O> {
  run(input: I): Promise<O>;
}

interface BatcherOptions {
  /** Most inputs in one batch call (default 200). */
  maxBatchSize?: number;
  /**
   * Most batch calls running at once (default unbounded). Past it, inputs wait and go together in
   * the next call once one ends: under load fewer, larger statements instead of many small ones
   * queueing for the same connections (group commit).
   */
  maxConcurrent?: number;
}

export function createBatcher<I, O>(
  runBatch: (inputs: I[]) => Promise<O[]>,
  options: BatcherOptions = {},
): Batcher<I, O> {
  const maxBatchSize = options.maxBatchSize ?? 200;
  const maxConcurrent = options.maxConcurrent ?? Number.POSITIVE_INFINITY;
  let pending: { input: I; resolve: (output: O) => void; reject: (error: unknown) => void }[] = [];
  let scheduled = false;
  let running = 0;

  const flush = () => {
    scheduled = false;
    while (pending.length > 0 && running < maxConcurrent) {
      const batch = pending.slice(0, maxBatchSize);
      pending = pending.slice(maxBatchSize);
      // A runBatch that throws instead of returning a rejected promise fails its own batch only: the
      // exception must neither escape into setImmediate (an uncaught error) nor stop the loop
      // before the later batches are started (their callers would wait forever).
      let outputs: Promise<O[]>;
      try {
        outputs = runBatch(batch.map((item) => item.input));
      } catch (error) {
        outputs = Promise.reject(error);
      }
      running += 1;
      outputs
        .then(
          (outputs) => {
            batch.forEach((item, n) => {
              item.resolve(outputs[n] as O);
            });
          },
          (error: unknown) => {
            for (const item of batch) item.reject(error);
          },
        )
        .finally(() => {
          running -= 1;
          // What gathered meanwhile goes now, together.
          if (pending.length > 0 && !scheduled) flush();
        });
    }
  };

  return {
    run(input) {
      return new Promise<O>((resolve, reject) => {
        pending.push({ input, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          // After the current turn's other callbacks have had their chance to join.
          setImmediate(flush);
        }
      });
    },
  };
}
