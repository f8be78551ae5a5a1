import type { IncomingHttpHeaders, Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Request, type Response } from "express";
import type { TestContext } from "./context.ts";

// A real HTTP receiver on loopback that records every delivery it gets.

export interface Delivery {
  /** When the request arrived (ms since the epoch). */
  at: number;
  rawBody: string;
  headers: IncomingHttpHeaders;
  path: string;
  method: string;
}

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Deliveries whose `webhook-id` header is the given id. */
  deliveriesOf(webhookId: string): Delivery[];
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /** Status to answer the n-th request (0-based); 200 by default. */
  status?: (n: number, req: Request) => number;
  /** Extra handlers mounted before the recorder, e.g. the @jiter/node webhook middleware. */
  mount?: (app: express.Express) => void;
  /**
   * Whether to leave the n-th request (0-based) unanswered: the connection is accepted and the
   * request recorded, but no response ever comes (until the receiver is closed). Never by default.
   */
  hang?: (n: number, req: Request) => boolean;
  /** Milliseconds to wait before answering each request; none by default. */
  delayMs?: number;
  /** Headers of the answer to the n-th request (0-based); none by default. */
  answerHeaders?: (n: number, req: Request) => Record<string, string> | undefined;
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const app = express();
  app.use(
    express.json({
      limit: "1mb",
      verify: (req, _res, buffer) => {
        (req as unknown as { rawBody: string }).rawBody = buffer.toString("utf8");
      },
    }),
  );
  // Any other body (text, a raw payload), as bytes.
  app.use(
    express.raw({
      type: () => true,
      limit: "1mb",
      verify: (req, _res, buffer) => {
        (req as unknown as { rawBody: string }).rawBody = buffer.toString("utf8");
      },
    }),
  );
  app.use((req: Request, _res, next) => {
    deliveries.push({
      at: Date.now(),
      rawBody: (req as unknown as { rawBody?: string }).rawBody ?? "",
      headers: req.headers,
      path: req.path,
      method: req.method,
    });
    next();
  });
  options.mount?.(app);
  app.use((req: Request, res: Response) => {
    const n = deliveries.length - 1;
    if (options.hang?.(n, req)) return;
    const status = options.status?.(n, req) ?? 200;
    const headers = options.answerHeaders?.(n, req);
    const answer = () => {
      if (res.writableEnded || res.destroyed) return;
      if (headers) res.set(headers);
      res.status(status).json({ received: status < 300 });
    };
    if (options.delayMs) setTimeout(answer, options.delayMs);
    else answer();
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    deliveriesOf: (webhookId) => deliveries.filter((delivery) => delivery.headers["webhook-id"] === webhookId),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A receiver that closes when the test context does. */
export async function startTestReceiver(
  context: Pick<TestContext, "onClose">,
  options: ReceiverOptions = {},
): Promise<Receiver> {
  const receiver = await startReceiver(options);
  context.onClose(receiver.close);
  return receiver;
}
