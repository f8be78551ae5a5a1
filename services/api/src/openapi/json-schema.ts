import { z } from "zod";

type Json = Record<string, unknown>;

/**
 * Two rewrites of zod's output that keep its meaning: `anyOf: [{type: T, …}, {type: "null"}]`
 * becomes `{type: [T, "null"], …}` (the form viewers such as Scalar understand), and the
 * safe-integer bounds zod puts on every `.int()` are dropped (noise in a reference).
 */
export function tidy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tidy);
  if (typeof value !== "object" || value === null) return value;
  const schema = Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, tidy(inner)])) as Json;
  if (schema.type === "integer") {
    if (schema.minimum === Number.MIN_SAFE_INTEGER) delete schema.minimum;
    if (schema.maximum === Number.MAX_SAFE_INTEGER) delete schema.maximum;
  }
  const anyOf = schema.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const [first, second] = anyOf as Json[];
    if (
      first &&
      typeof first.type === "string" &&
      second &&
      Object.keys(second).length === 1 &&
      second.type === "null"
    ) {
      const { anyOf: _anyOf, ...rest } = schema;
      return { ...first, ...rest, type: [first.type, "null"] };
    }
  }
  return schema;
}

/** Converts a registry of named schemas; `$schema` and `$id` are dropped (components carry the name). */
export function convertNamed(named: Record<string, z.ZodType>, io: "input" | "output"): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` });
  const result: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    if (id === "__shared") throw new Error("OpenAPI: a schema referenced an unnamed shared definition");
    const { $schema: _schema, $id: _id, ...rest } = schema as Json;
    result[id] = tidy(rest) as Json;
  }
  return result;
}
