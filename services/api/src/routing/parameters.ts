import { z } from "zod";
import { tidy } from "../openapi/json-schema.ts";
import type { Json } from "./route.ts";

// OpenAPI parameter objects for route declarations, converted from the validators' own schemas
// where there is one.

/** One query parameter per property of an object schema's input side. */
export function queryParameters(schema: z.ZodType, descriptions: Record<string, string> = {}): Json[] {
  const json = tidy(z.toJSONSchema(schema, { io: "input" })) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return {
      name,
      in: "query",
      required: json.required?.includes(name) ?? false,
      description: descriptions[name] ?? description,
      schema: propertySchema,
    };
  });
}

/** A path parameter whose schema is the validator's own (admin ids) or a plain string. */
export function pathParameter(name: string, description: string, schema?: z.ZodType): Json {
  const json = schema ? z.toJSONSchema(schema, { io: "input" }) : { type: "string" };
  const { $schema: _schema, ...rest } = tidy(json) as Json;
  return { name, in: "path", required: true, description, schema: rest };
}

/** A parameter described once in `components.parameters`. */
export function parameterRef(name: string): Json {
  return { $ref: `#/components/parameters/${name}` };
}
