/**
 * The value of `work`, or `onTimeout` when it has not settled within `timeoutMs`. A rejection is
 * passed on; work that times out goes on in the background and its outcome is ignored.
 */
export async function withTimeout<T, F>(work: Promise<T>, timeoutMs: number, onTimeout: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
