import { AppError, createLogger, parseInput } from "@punctual/core";
import express from "express";
import request from "supertest";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { errorHandler } from "../middleware/errors.ts";
import { requestContext } from "../middleware/request-context.ts";
import { defineRoute } from "./route.ts";
import { routerFor } from "./route-router.ts";

const deps = {
  config: { MAX_PAYLOAD_BYTES: 1024, ALLOW_PRIVATE_DESTINATIONS: false },
  clock: { now: () => new Date("2030-01-01T00:00:00Z") },
} as never;

const route = defineRoute({
  method: "post",
  path: "/api/things/{thingId}",
  operationId: "touchThing",
  summary: "Touch a thing",
  tag: "Things",
  security: "none",
  body: { component: "TouchThing", schema: (limits) => z.object({ size: z.number().max(limits.maxPayloadBytes) }) },
  failure: "Unable to touch the thing",
  responses: { "200": { description: "Touched." } },
  handler: (_deps: unknown, schema) => async (req, res) => {
    const { size } = parseInput(schema, req.body);
    if (req.params.thingId === "missing") throw new AppError("NOT_FOUND", "No such thing");
    if (req.params.thingId === "broken") throw new Error("connection reset by a secret host");
    res.json({ thingId: req.params.thingId, size });
  },
});

function app() {
  const target = express();
  target.use(requestContext(createLogger({ LOG_LEVEL: "silent" }, "test")), express.json());
  target.use("/api/things", routerFor([route], deps, { mountedAt: "/api/things" }));
  target.use(errorHandler());
  return target;
}

describe("defineRoute", () => {
  it("documents the failure message as the 500 answer", () => {
    expect(route.responses["500"]).toEqual({
      description: "Unexpected failure.",
      json: "Error",
      messages: ["Unable to touch the thing"],
    });
  });

  it("serves the declared path, with the body schema built for the deployment's limits", async () => {
    const touched = await request(app()).post("/api/things/t1").send({ size: 1024 });
    expect({ status: touched.status, body: touched.body }).toEqual({
      status: 200,
      body: { thingId: "t1", size: 1024 },
    });
    expect((await request(app()).post("/api/things/t1").send({ size: 1025 })).status).toBe(400);
  });

  it("answers an unexpected failure with the route's message, and passes client errors through", async () => {
    const broken = await request(app()).post("/api/things/broken").send({ size: 1 });
    expect({ status: broken.status, body: broken.body }).toEqual({
      status: 500,
      body: { message: "Unable to touch the thing" },
    });
    const missing = await request(app()).post("/api/things/missing").send({ size: 1 });
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 404, body: { message: "No such thing" } });
  });
});
