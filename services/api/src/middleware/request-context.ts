import { randomUUID } from "node:crypto";
import type { Logger } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

declare global {
  namespace Express {
    interface Locals {
      requestId: string;
      log: Logger;
    }
  }
}

/**
 * Gives every request an id (the caller's `X-Request-Id` when it is sane, else a new UUID), echoes it
 * in the response, and logs one line per request when the response is finished.
 */
export function requestContext(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const given = req.get("x-request-id");
    const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    const started = process.hrtime.bigint();
    res.locals.requestId = requestId;
    res.locals.log = logger.child({ reqId: requestId });
    res.setHeader("X-Request-Id", requestId);
    res.on("finish", () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      const line = {
        method: req.method,
        path: req.path,
        status: res.statusCode,
        durationMs: Math.round(durationMs * 10) / 10,
      };
      if (res.statusCode >= 500) res.locals.log.error(line, "request failed");
      else res.locals.log.debug(line, "request");
    });
    next();
  };
}
