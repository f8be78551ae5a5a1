import type { z } from "zod";
import { badRequest } from "./errors.ts";

/** The field a zod issue is about, as clients spelled it. */
function fieldOf(issue: z.core.$ZodIssue): string {
  return issue.path.map(String).join(".");
}

/**
 * One clear sentence for the first problem zod found. Schemas put the contract's exact wording in
 * their own messages; this only supplies wording for the generic cases (missing, unknown, wrong type).
 */
function describeIssue(issue: z.core.$ZodIssue): string {
  const field = fieldOf(issue);
  if (issue.code === "unrecognized_keys") {
    const [first] = issue.keys;
    return `Unknown field '${first}'`;
  }
  if (issue.code === "invalid_type") {
    if (issue.input === undefined) return field ? `'${field}' is required` : "Request body is required";
    if (!field) return `Request body must be a JSON ${issue.expected}`;
    return `'${field}' must be ${issue.expected === "object" || issue.expected === "array" ? "an" : "a"} ${issue.expected}`;
  }
  // Messages written in the schemas are complete sentences already.
  return issue.message;
}

/**
 * Parses input with a schema or throws a 400 AppError with one clear sentence. An unknown field is
 * reported before anything else, so a misspelt `payloadd` is named rather than `payload` missing.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  // zod 4 leaves `input` out of issues unless asked; describeIssue needs it to tell "missing" from
  // "wrong type".
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const issues = result.error.issues;
  const first = issues.find((issue) => issue.code === "unrecognized_keys") ?? issues[0];
  throw badRequest(first ? describeIssue(first) : "Invalid request");
}
