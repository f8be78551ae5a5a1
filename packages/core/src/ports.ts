import { createServer } from "node:net";
import type { Config } from "./config.ts";
import { StartupError } from "./startup-error.ts";

/** Where a process listens, and the settings that chose it (named in messages). */
interface ListenTarget {
  port: number;
  host: string;
  portVariable: string;
  hostVariable: string;
}

/** The API's address: PORT and HOST. */
export function apiListenTarget(config: Pick<Config, "PORT" | "HOST">): ListenTarget {
  return { port: config.PORT, host: config.HOST, portVariable: "PORT", hostVariable: "HOST" };
}

/** The worker's health and metrics address: WORKER_HEALTH_PORT and WORKER_HEALTH_HOST. */
export function workerHealthTarget(config: Pick<Config, "WORKER_HEALTH_PORT" | "WORKER_HEALTH_HOST">): ListenTarget {
  return {
    port: config.WORKER_HEALTH_PORT,
    host: config.WORKER_HEALTH_HOST,
    portVariable: "WORKER_HEALTH_PORT",
    hostVariable: "WORKER_HEALTH_HOST",
  };
}

/**
 * The StartupError a failed `listen` stands for (port taken, no permission, no such address), or the
 * error itself when it is none of those.
 */
export function listenError(error: unknown, target: ListenTarget): unknown {
  const { port, host, portVariable, hostVariable } = target;
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case "EADDRINUSE":
      return new StartupError(
        `Port ${port} is already in use (${portVariable}). Stop the other process or set ${portVariable} in .env.`,
      );
    case "EACCES":
      return new StartupError(
        `Not allowed to listen on port ${port} (${portVariable}): ports below 1024 need privileges. Set ${portVariable} in .env to a higher port.`,
      );
    case "EADDRNOTAVAIL":
      return new StartupError(
        `Cannot listen on ${host} (${hostVariable}): no such address on this machine. Set ${hostVariable} in .env, e.g. to 127.0.0.1.`,
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError(
        `Cannot listen on ${host} (${hostVariable}): host name not found. Set ${hostVariable} in .env.`,
      );
    default:
      return error;
  }
}

/**
 * Fails with the StartupError of `listenError` when the port cannot be listened on right now. Run
 * before a process connects to anything, so a taken port stops it before it takes any work (the
 * worker only opens its health port once it is already taking jobs). Port 0 is always free.
 */
export async function ensurePortFree(target: ListenTarget): Promise<void> {
  if (target.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (error) => reject(listenError(error, target)));
    probe.listen(target.port, target.host, () => probe.close(() => resolve()));
  });
}

/** The URL that reaches a server listening on `host`: a wildcard address is reached on loopback. */
export function listeningUrl(host: string, port: number, path = ""): string {
  const wildcard = host === "0.0.0.0" || host === "::" || host === "";
  const shown = wildcard ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return `http://${shown}:${port}${path}`;
}

/** Where the worker's /healthz answers; with port 0 (a free port) the worker's start line has it. */
export function workerHealthUrl(config: Pick<Config, "WORKER_HEALTH_PORT" | "WORKER_HEALTH_HOST">): string {
  if (config.WORKER_HEALTH_PORT === 0)
    return "a free port (WORKER_HEALTH_PORT=0: see healthPort in the worker's start line)";
  return listeningUrl(config.WORKER_HEALTH_HOST, config.WORKER_HEALTH_PORT, "/healthz");
}
