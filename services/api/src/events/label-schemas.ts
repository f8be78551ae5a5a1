import {
  LABEL_FILTER_INVALID,
  LABELS_NOT_OBJECT,
  type Labels,
  labelKeyInvalid,
  labelsProblem,
  labelValueNotString,
  labelValueTooLong,
  MAX_LABEL_VALUE_LENGTH,
  MAX_LABELS,
  parseLabelFilter,
  TOO_MANY_LABELS,
} from "@punctual/core";
import { z } from "zod";

// Labels in requests and answers (contract §10.5): the `labels` field of event and cron job bodies,
// every record's `labels`, and the `label=key:value` filters of the events list and bulk cancel.
// Each mistake is refused with its own sentence (packages/core/src/events/labels.ts).

const LABELS_JSON = {
  type: "object",
  maxProperties: MAX_LABELS,
  propertyNames: { pattern: "^[a-z0-9._-]{1,64}$" },
  additionalProperties: { type: "string", maxLength: MAX_LABEL_VALUE_LENGTH },
};

/** Examples of the refusals of `labels`, for the document. */
export const LABEL_REFUSALS = [
  LABELS_NOT_OBJECT,
  TOO_MANY_LABELS,
  labelKeyInvalid("Team"),
  labelValueNotString("team"),
  labelValueTooLong("team"),
];

/** The `labels` of a create body: at most 10 pairs of a key and a string value. */
export const labelsField = z
  .unknown()
  .transform((value, ctx): Labels => {
    const problem = labelsProblem(value);
    if (problem === undefined) return value as Labels;
    ctx.addIssue({ code: "custom", message: problem });
    return z.NEVER;
  })
  .meta({
    ...LABELS_JSON,
    description:
      `Labels (contract §10.5): at most ${MAX_LABELS} pairs, each key 1 to 64 characters of \`a-z 0-9 . _ -\`, ` +
      `each value a string of at most ${MAX_LABEL_VALUE_LENGTH} characters. Events are listed and cancelled by them`,
  });

/** In an edit: new labels, replacing all of them, or null to remove them. */
export const labelsEditField = labelsField.nullable().optional();

/** Every record's `labels`: always present, `{}` when none. */
export const labelsAnswer = z
  .record(z.string(), z.string())
  .meta({ description: "Its labels (contract §10.5); `{}` when none" });

export const TOO_MANY_LABEL_FILTERS = `At most ${MAX_LABELS} 'label' filters can be given`;

/**
 * The `label` filters: each `key:value`, all of which an event must carry. Repeated in a query
 * string (`?label=a:1&label=b:2`), a list in a JSON body; also one string. Read from `unknown` so
 * that each mistake gets its own sentence (a union would answer zod's generic one).
 */
export const labelFilters = z
  .unknown()
  .transform((value, ctx): [string, string][] => {
    const texts = Array.isArray(value) ? value : [value];
    if (texts.length > MAX_LABELS) {
      ctx.addIssue({ code: "custom", message: TOO_MANY_LABEL_FILTERS });
      return z.NEVER;
    }
    const pairs: [string, string][] = [];
    for (const text of texts) {
      const pair = typeof text === "string" ? parseLabelFilter(text) : undefined;
      if (!pair) {
        ctx.addIssue({ code: "custom", message: LABEL_FILTER_INVALID });
        return z.NEVER;
      }
      pairs.push(pair);
    }
    return pairs;
  })
  .optional()
  .meta({
    anyOf: [{ type: "string" }, { type: "array", items: { type: "string" }, maxItems: MAX_LABELS }],
    description: `\`key:value\`; repeat it (at most ${MAX_LABELS}) to ask for events carrying every one of them`,
  });
