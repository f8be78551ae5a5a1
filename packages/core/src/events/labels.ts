// Labels (contract §10.5): up to MAX_LABELS key → string value pairs a client puts on its events and
// cron jobs, to list and cancel events by. What a label may be and the sentences refusing the rest,
// shared by the API's bodies and its `label=key:value` filters. Stored as a jsonb object, NULL for
// none, so an unlabelled record costs nothing in the labels index.

export const MAX_LABELS = 10;
export const MAX_LABEL_KEY_LENGTH = 64;
export const MAX_LABEL_VALUE_LENGTH = 256;
/** 1–64 characters of `a-z 0-9 . _ -`: lower case, so `Team` and `team` never name two labels. */
export const LABEL_KEY_PATTERN = /^[a-z0-9._-]{1,64}$/;

export type Labels = Record<string, string>;

export const LABELS_NOT_OBJECT = "'labels' must be an object of label keys to string values";
export const TOO_MANY_LABELS = `'labels' may hold at most ${MAX_LABELS} labels`;
export const labelKeyInvalid = (key: string) =>
  `Label key '${key}' must be 1 to ${MAX_LABEL_KEY_LENGTH} characters of lower-case letters, digits, '.', '_' or '-'`;
export const labelValueNotString = (key: string) => `Label '${key}' must have a string value`;
export const labelValueTooLong = (key: string) =>
  `Label '${key}' must have a value of at most ${MAX_LABEL_VALUE_LENGTH} characters`;
export const labelValueNotText = (key: string) => `Label '${key}' must have a value of text without NUL characters`;
export const LABEL_FILTER_INVALID = "'label' must be written key:value, e.g. label=customer:42";

/** The first problem of a `labels` value, or undefined when it is a valid set of labels. */
export function labelsProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return LABELS_NOT_OBJECT;
  const entries = Object.entries(value);
  if (entries.length > MAX_LABELS) return TOO_MANY_LABELS;
  for (const [key, label] of entries) {
    if (!LABEL_KEY_PATTERN.test(key)) return labelKeyInvalid(key);
    if (typeof label !== "string") return labelValueNotString(key);
    if ([...label].length > MAX_LABEL_VALUE_LENGTH) return labelValueTooLong(key);
    // Postgres text (and jsonb) cannot hold NUL, nor a lone surrogate.
    if (label.includes("\u0000") || /\p{Cs}/u.test(label)) return labelValueNotText(key);
  }
  return undefined;
}

/**
 * The stored form of labels: undefined stays undefined (not given), an empty object is NULL (none),
 * anything else its JSON text for a `::jsonb` parameter.
 */
export const labelsColumn = (labels: Labels | null | undefined): string | null =>
  labels == null || Object.keys(labels).length === 0 ? null : JSON.stringify(labels);

/** Labels as read from their column: an object, `{}` for none. */
export const labelsFromColumn = (value: unknown): Labels =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Labels) : {};

/**
 * One `label=key:value` filter, or undefined when it is not written so. The value is everything
 * after the first colon (it may hold colons itself); the key follows the key rule.
 */
export function parseLabelFilter(text: string): [string, string] | undefined {
  const colon = text.indexOf(":");
  if (colon === -1) return undefined;
  const key = text.slice(0, colon);
  const value = text.slice(colon + 1);
  if (!LABEL_KEY_PATTERN.test(key) || labelsProblem({ [key]: value }) !== undefined) return undefined;
  return [key, value];
}

/**
 * The labels an event must carry for every `key:value` filter to hold, as one object for a jsonb
 * containment (`labels @> …`), or undefined when two filters ask one key for different values (no
 * event can match both).
 */
export function requiredLabels(filters: readonly (readonly [string, string])[]): Labels | undefined {
  // A Map: a key such as `__proto__` is a label like any other.
  const required = new Map<string, string>();
  for (const [key, value] of filters) {
    if (required.has(key) && required.get(key) !== value) return undefined;
    required.set(key, value);
  }
  return Object.fromEntries(required);
}
