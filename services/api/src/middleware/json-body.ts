import { AppError } from "@punctual/core";
import express, { type NextFunction, type Request, type Response } from "express";
import { INVALID_JSON_BODY } from "./errors.ts";

/** Contract §1: request bodies over 16 KiB are refused with 413. */
export const MAX_BODY_BYTES = 16 * 1024;
/**
 * The body of POST /api/events/batch: up to 1000 create bodies (contract §10.5), each typically well
 * under 4 KiB. Only that route reads a body this large (`bodyLimitOf`).
 */
export const MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024;

const parsers = new Map<number, ReturnType<typeof express.json>>();
const parseJsonWithin = (limit: number) => {
  let parser = parsers.get(limit);
  if (!parser) {
    parser = express.json({ limit, strict: false, type: () => true });
    parsers.set(limit, parser);
  }
  return parser;
};

const BYTE_ORDER_MARK = 0xfeff;

function hasBody(req: Request): boolean {
  const length = req.get("content-length");
  return req.get("transfer-encoding") !== undefined || (length !== undefined && length !== "0");
}

/**
 * The body of the common request, when it can be taken as it is: plain UTF-8 JSON (no content
 * encoding, no charset or other parameter), a Content-Length within the limit, and every byte
 * already received (the check of the API key and the rate limit run first, so a small body has
 * usually arrived by now). Undefined for anything else, which body-parser reads.
 */
function receivedBody(req: Request, contentType: string, limit: number): Buffer | undefined {
  if (contentType.includes(";")) return undefined;
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.toLowerCase() !== "identity") return undefined;
  const length = Number(req.headers["content-length"]);
  if (!Number.isInteger(length) || length > limit) return undefined;
  if (!req.complete || req.readableLength !== length) return undefined;
  // With no size, read() returns everything buffered, which is the whole body here.
  return length === 0 ? Buffer.alloc(0) : (req.read() as Buffer);
}

/**
 * Parses JSON bodies. A body sent with another content type, or with none, is refused with 415
 * rather than silently ignored or guessed at; a request without a body (no Content-Length, or 0)
 * gets `req.body === undefined`, whatever its headers, so a replay or a sign-out needs no type.
 *
 * A body without a type is refused too: a browser sends one cross-site without a preflight
 * (`navigator.sendBeacon`, or `fetch` in `no-cors` mode, with a Blob or an ArrayBuffer that has no
 * type), so such a request is refused for its type, not only by the origin checks
 * (console-session/session-origin-guard.ts). Clients that send JSON say so: the SDK (axios), the
 * console (services/console/src/api/client.ts), curl with `-H 'content-type: application/json'`.
 */
export function jsonBody(
  /** The largest body of this request, in bytes: MAX_BODY_BYTES unless a route reads more. */
  bodyLimitOf: (req: Request) => number = () => MAX_BODY_BYTES,
) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!hasBody(req)) return next();
    const contentType = req.get("content-type");
    if (contentType === undefined || !/^application\/([a-z.+-]*\+)?json\s*(;|$)/i.test(contentType)) {
      return next(new AppError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"));
    }
    // Parsed here as body-parser would (UTF-8 without a leading byte order mark, an empty body is
    // {}), without its stream machinery, which costs more than the parse on every create.
    const limit = bodyLimitOf(req);
    const body = receivedBody(req, contentType, limit);
    if (body === undefined) return parseJsonWithin(limit)(req, res, next);
    let text = body.toString("utf8");
    if (text.charCodeAt(0) === BYTE_ORDER_MARK) text = text.slice(1);
    try {
      req.body = text.length === 0 ? {} : JSON.parse(text);
    } catch {
      return next(new AppError("BAD_REQUEST", INVALID_JSON_BODY));
    }
    next();
  };
}
