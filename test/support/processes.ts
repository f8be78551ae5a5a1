import { type ChildProcess, spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { resolve } from "node:path";

export const repositoryRoot = resolve(import.meta.dirname, "../..");

/** A port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export interface ServiceProcess {
  child: ChildProcess;
  output: () => string;
  /** Sends a signal and waits for the exit; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a Punctual service (`services/<name>/src/main.ts`) as its own process. */
export function startService(name: "api" | "worker", env: Record<string, string>): ServiceProcess {
  // `node --import tsx` rather than the tsx launcher: the launcher kills a busy child on SIGTERM
  // before its shutdown handler runs.
  // PUNCTUAL_ENV_FILE=none: a developer's own .env in the repository must not change the test's settings.
  return spawnProcess(process.execPath, ["--import", "tsx", `services/${name}/src/main.ts`], {
    cwd: repositoryRoot,
    env: { ...process.env, PUNCTUAL_ENV_FILE: "none", ...env },
  });
}

/**
 * Runs a command with its output kept (stdout and stderr together, as a terminal shows them).
 * With `detached`, `stop` signals the whole process group: a shell and everything it started.
 */
export function spawnProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; detached?: boolean },
): ServiceProcess {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolveExit) => child.once("exit", (code) => resolveExit(code)));
  return {
    child,
    output: () => output,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        if (options.detached) process.kill(-child.pid, signal);
        else child.kill(signal);
      }
      return exited;
    },
  };
}

/** Sends a signal to a service process (node itself: no launcher in between). */
export function signalService(service: ServiceProcess, signal: NodeJS.Signals): void {
  service.child.kill(signal);
}

/** Resolves with the service's exit code once it has exited, without signalling it. */
export function exitOf(service: ServiceProcess): Promise<number | null> {
  if (service.child.exitCode !== null || service.child.signalCode !== null)
    return Promise.resolve(service.child.exitCode);
  return new Promise((resolve) => service.child.once("exit", (code) => resolve(code)));
}

/** How long a service process started by a test may take to answer its health address. */
const SERVICE_START_TIMEOUT_MS = 60_000;

/**
 * Waits until a service process started by a test answers `GET url` with 200. It compiles its
 * sources (tsx) and, a worker, warms up (WORKER_WARMUP_REQUESTS) first: seconds alone, longer beside
 * the other test files on two cores. When it does not answer, the error carries its output.
 */
export function waitForService(service: ServiceProcess, url: string): Promise<void> {
  return waitForHttp(url, SERVICE_START_TIMEOUT_MS).catch((error: unknown) => {
    throw new Error(`${error}\nits output:\n${service.output()}`);
  });
}

/** Waits until `GET url` answers 200. */
export async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

type ContextConfig = { DATABASE_URL: string; REDIS_URL: string; QUEUE_PREFIX: string };

/** Where a service process finds a test context's database and queues. */
function contextEnv(config: ContextConfig): ContextConfig {
  return { DATABASE_URL: config.DATABASE_URL, REDIS_URL: config.REDIS_URL, QUEUE_PREFIX: config.QUEUE_PREFIX };
}

/** The settings of an API process on a test context's database and queues, listening on `port` of loopback. */
export function apiProcessEnv(config: ContextConfig, port: number): Record<string, string> {
  return { ...contextEnv(config), PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info" };
}

/**
 * A service process given the settings `env` makes for a free port, started and answering /healthz
 * on that port; killed when it does not.
 */
async function startAnswering(
  name: "api" | "worker",
  env: (port: number) => Record<string, string>,
): Promise<{ service: ServiceProcess; port: number }> {
  const port = await freePort();
  const service = startService(name, env(port));
  try {
    await waitForService(service, `http://127.0.0.1:${port}/healthz`);
  } catch (error) {
    await service.stop("SIGKILL");
    throw error;
  }
  return { service, port };
}

/**
 * An API process on a test context's database and queues, started and answering /healthz; `env`
 * adds or overrides settings.
 */
export async function startApiProcess(
  config: ContextConfig,
  env: Record<string, string> = {},
): Promise<{ api: ServiceProcess; port: number }> {
  const { service, port } = await startAnswering("api", (free) => ({ ...apiProcessEnv(config, free), ...env }));
  return { api: service, port };
}

/**
 * The settings of a worker process on a test context's database and queues (private destinations
 * allowed), its /healthz on `port`.
 */
export function workerProcessEnv(config: ContextConfig, port: number): Record<string, string> {
  return {
    ...contextEnv(config),
    WORKER_HEALTH_PORT: String(port),
    ALLOW_PRIVATE_DESTINATIONS: "true",
    LOG_LEVEL: "warn",
  };
}

/**
 * A worker process on a test context's database and queues, started and answering /healthz; `env`
 * adds or overrides settings.
 */
export async function startWorkerProcess(
  config: ContextConfig,
  env: Record<string, string> = {},
): Promise<{ worker: ServiceProcess; port: number }> {
  const { service, port } = await startAnswering("worker", (free) => ({ ...workerProcessEnv(config, free), ...env }));
  return { worker: service, port };
}

/** Resolves true when a new TCP connection to the port is refused. */
export function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}
