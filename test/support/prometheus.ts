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
