import { AppError } from "@punctual/core";
import express, { type NextFunction, type Request, type Response } from "express";

/** Contract §1: request bodies over 16 KiB are refused with 413. */
export const MAX_BODY_BYTES = 16 * 1024;

const parseJson = express.json({ limit: MAX_BODY_BYTES, strict: false, type: () => true });

function hasBody(req: Request): boolean {
  const length = req.get("content-length");
  return req.get("transfer-encoding") !== undefined || (length !== undefined && length !== "0");
}

/**
 * Parses JSON bodies. A body sent with another content type is refused with 415 rather than
 * silently ignored; a request without a body gets `req.body === undefined`.
 */
export function jsonBody() {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req)) return next();
    const contentType = req.get("content-type");
    if (contentType !== undefined && !/^application\/([a-z.+-]*\+)?json\s*(;|$)/i.test(contentType)) {
      return next(new AppError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"));
    }
    parseJson(req, res, next);
  };
}
