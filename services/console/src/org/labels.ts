// Labels as the console types them: one `key:value` a line in a form (a record's labels), and
// `key:value` separated by commas or spaces in the events filter. The API judges keys and values
// (and answers its own sentence); the console only splits the text.

export type Labels = Record<string, string>;

/** The most labels a record carries, and the most label filters a list takes. */
export const MAX_LABELS = 10;

/** `key:value` split at its first colon; undefined when either side is empty. */
function pairOf(text: string): [string, string] | undefined {
  const colon = text.indexOf(":");
  if (colon <= 0) return undefined;
  const key = text.slice(0, colon).trim();
  const value = text.slice(colon + 1).trim();
  return key && value ? [key, value] : undefined;
}

/** A form's labels text (one `key:value` a line, blank lines ignored) as a record, or what is wrong. */
export function parseLabels(text: string): { labels: Labels } | { problem: string } {
  const labels: Labels = {};
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const pair = pairOf(line);
    if (!pair) return { problem: `Write each label as key:value, one a line (not “${line.trim()}”)` };
    if (pair[0] in labels) return { problem: `The label ${pair[0]} is given twice` };
    labels[pair[0]] = pair[1];
  }
  if (Object.keys(labels).length > MAX_LABELS) return { problem: `At most ${MAX_LABELS} labels can be given` };
  return { labels };
}

/** A record's labels as the form shows them. */
export function labelsText(labels: Labels | null | undefined): string {
  return Object.entries(labels ?? {})
    .map(([key, value]) => `${key}:${value}`)
    .join("\n");
}

/** The events filter's labels text as `label=` parameters: each `key:value` as typed, empty ones dropped. */
export function labelFilters(text: string): string[] {
  return text.split(/[\s,]+/).filter((part) => part !== "");
}

/** Two records' labels are the same set of pairs. */
export function sameLabels(a: Labels, b: Labels): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => b[key] === a[key]);
}
