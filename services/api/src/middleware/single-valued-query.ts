import { badRequest } from "@punctual/core";
import type { Request } from "express";

/**
 * The query as plain strings, each of the `known` parameters at most once. The app's query parser is
 * `simple`, so `?a=1&a=2` arrives as an array: a handler reading it as a string would drop the
 * filter silently (and answer more than was asked), so it is refused instead, as is an unknown name.
 */
export function singleValuedQuery(query: Request["query"], known: ReadonlySet<string>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    if (!known.has(name)) throw badRequest(`Unknown query parameter '${name}'`);
    if (typeof value !== "string") throw badRequest(`Query parameter '${name}' must be given only once`);
    values[name] = value;
  }
  return values;
}
