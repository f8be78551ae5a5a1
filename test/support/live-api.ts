import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "@punctual/core";
import { createApp } from "../../services/api/src/app.ts";
import { createTestApiDeps, type TestContext } from "./context.ts";

// The API as a client meets it: the real app on the test file's database and Redis, listening on
// a loopback port of its own.

export interface LiveApi {
  /** The server's root, as the client's `baseUrl` takes it. */
  baseUrl: string;
  port: number;
}

/** Starts the API; it closes when the context does. */
export async function startLiveApi(context: TestContext, clock?: Clock): Promise<LiveApi> {
  const server: Server = createApp(createTestApiDeps(context, clock).deps).listen(0, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  context.onClose(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}`, port };
}
