import { AppError } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";

export const GENERIC_FAILURE = "Internal server error";
export const INVALID_JSON_BODY = "Request body is not valid JSON";

/** Body-parser's errors carry a `type`; map the ones a client can cause to the contract's texts. */
function clientBodyError(error: unknown): AppError | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  // The router cannot percent-decode a path parameter (`/api/events/%ff`): its URIError would
  // otherwise be a 500, and its message echoes the raw input.
  if (error instanceof URIError) return new AppError("BAD_REQUEST", "Request path is not valid");
  if (!("type" in error)) {
    // A gzip, deflate or br body that does not decompress: body-parser passes zlib's error on with
    // status 400 and no `type`.
    const { status, expose } = error as { status?: unknown; expose?: unknown };
    return status === 400 && expose === true
      ? new AppError("BAD_REQUEST", "Request body could not be decoded")
      : undefined;
  }
  switch ((error as { type: unknown }).type) {
    case "entity.parse.failed":
      return new AppError("BAD_REQUEST", INVALID_JSON_BODY);
    case "entity.too.large":
      return new AppError("PAYLOAD_TOO_LARGE", "Request body is too large");
    case "encoding.unsupported":
    case "charset.unsupported":
      return new AppError("UNSUPPORTED_MEDIA_TYPE", "Request body must be UTF-8 JSON");
    case "request.aborted":
    case "request.size.invalid":
      return new AppError("BAD_REQUEST", "Request body was incomplete");
    default:
      return undefined;
  }
}

/**
 * Wraps a handler so that an unexpected failure answers with the route's own 500 message (e.g.
 * "Unable to create the event") instead of the generic one. Client errors pass through.
 */
export function answeringFailuresWith(
  message: string,
  handler: (req: Request, res: Response, next: NextFunction) => void | Promise<void>,
) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      await handler(req, res, next);
    } catch (error) {
      if (error instanceof AppError) throw error;
      res.locals.log.error({ err: error }, message);
      throw new AppError("INTERNAL", message);
    }
  };
}

/** The last middleware: every error becomes `{message}` with its status; a 500 never leaks details. */
export function errorHandler() {
  return (error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const appError = error instanceof AppError ? error : clientBodyError(error);
    if (appError) {
      res.status(appError.status).json({ message: appError.message });
      return;
    }
    res.locals.log?.error({ err: error }, "unhandled error");
    res.status(500).json({ message: GENERIC_FAILURE });
  };
}

export function notFoundHandler() {
  return (_req: Request, res: Response) => {
    res.status(404).json({ message: "Not found" });
  };
}
