/** The value of one sample in Prometheus text, found by name and exact label set. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1], pair[2]]),
    );
    const wanted = Object.entries(labels);
    if (Object.keys(found).length === wanted.length && wanted.every(([key, value]) => found[key] === value)) {
      return Number(match[3]);
    }
  }
  return undefined;
}

/**
 * A worker's `punctual_prepared_jobs` gauge, read from its /metrics on `healthPort`: the events it
 * holds (prepared, claimed, in flight or between retries). NaN when the gauge is missing.
 */
export async function preparedJobs(healthPort: number | undefined): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
  return sample(text, "punctual_prepared_jobs") ?? Number.NaN;
}
