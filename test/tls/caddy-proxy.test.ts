import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SECURE_SESSION_COOKIE, SESSION_COOKIE } from "../../services/api/src/console-session/session-cookie.ts";
import { type RunningApi, startApi } from "../../services/api/src/server.ts";
import { composeServices } from "../support/compose.ts";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { freePort, repositoryRoot, type ServiceProcess, spawnProcess } from "../support/processes.ts";
import { CADDY, requireTool, skipWithout } from "../support/system-tools.ts";

// The TLS example of docs/tls.md, run for real: Caddy (Debian's package) with deploy/tls/Caddyfile,
// the file docker-compose.tls.yml mounts, in front of an API started here, on loopback, once with
// the TRUST_PROXY of a plain host and once with the compose file's. Caddy's own local authority
// signs the certificate (`tls internal`); the client trusts that root and nothing else (no
// verification turned off). Clients connect from 127.0.0.2 and up, so that their addresses differ
// from the proxy's (127.0.0.1).

const CADDYFILE = path.join(repositoryRoot, "deploy/tls/Caddyfile");
const COMPOSE_TLS_FILE = "docker-compose.tls.yml";
const DOMAIN = "localhost";

/**
 * The plain host's commands of docs/tls.md, so that the test runs what the page tells an operator
 * to type: the API's TRUST_PROXY, the variables exported for Caddy and the `caddy run` command.
 */
function plainHostCommands(): { trustProxy: string; exported: string[]; caddyArgs: string[] } {
  const doc = readFileSync(path.join(repositoryRoot, "docs/tls.md"), "utf8");
  const start = doc.indexOf("\n## On a plain host\n");
  const end = doc.indexOf("\n## ", start + 1);
  if (start < 0 || end < 0) throw new Error('docs/tls.md has no section "## On a plain host"');
  const shell = [...doc.slice(start, end).matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]).join("\n");
  const lines = shell.split("\n");
  const trustProxy = /\bTRUST_PROXY=(\S+)/.exec(shell)?.[1];
  const exported = lines
    .filter((line) => line.startsWith("export "))
    .flatMap((line) => [...line.matchAll(/\b([A-Z_]+)=/g)].map((match) => match[1] as string));
  const caddyRun = lines.find((line) => line.startsWith("caddy run "));
  if (!trustProxy || !caddyRun) throw new Error("docs/tls.md's plain host section lost its commands");
  return { trustProxy, exported, caddyArgs: caddyRun.trim().split(/\s+/).slice(1) };
}

const plainHost = plainHostCommands();
const composeTrustProxy = composeServices(COMPOSE_TLS_FILE).api?.environment?.TRUST_PROXY ?? "(unset)";

const setups = [
  // The API listens on 127.0.0.1 beside Caddy and believes the proxies there (docs/tls.md).
  { name: `on a plain host (TRUST_PROXY=${plainHost.trustProxy})`, trustProxy: plainHost.trustProxy },
  // The API's port is reached by Caddy alone: one hop.
  { name: `as docker-compose.tls.yml sets it (TRUST_PROXY=${composeTrustProxy})`, trustProxy: composeTrustProxy },
];

describe.skipIf(skipWithout(CADDY, "the TLS example with Caddy")).each(setups)(
  "Caddy with deploy/tls/Caddyfile in front of the API, $name",
  ({ trustProxy }) => {
    let context: TestContext;
    let org: TestOrganization;
    let api: RunningApi;
    let caddy: ServiceProcess | undefined;
    let home: string;
    let httpsPort: number;
    let httpPort: number;
    const agents: Agent[] = [];

    /** A client that trusts only Caddy's root certificate and connects from `localAddress`. */
    function clientFrom(localAddress: string): Agent {
      const ca = readFileSync(path.join(home, "data/caddy/pki/authorities/local/root.crt"));
      // family 4: `localhost` may resolve to ::1 first, which no 127.0.0.x address can reach.
      const agent = new Agent({ localAddress, connect: { ca, family: 4 } });
      agents.push(agent);
      return agent;
    }

    const https = (pathAndQuery: string) => `https://${DOMAIN}:${httpsPort}${pathAndQuery}`;

    beforeAll(async () => {
      context = await createTestContext({ TRUST_PROXY: trustProxy });
      org = await createTestOrganization(context);
      api = await startApi({ ...context.config, PORT: 0, HOST: "127.0.0.1" }, context.logger);
      home = mkdtempSync(path.join(tmpdir(), "punctual-caddy-"));
      [httpPort, httpsPort] = [await freePort(), await freePort()];
      // The command of docs/tls.md, from the repository, as an operator runs it.
      caddy = spawnProcess(requireTool(CADDY), plainHost.caddyArgs, {
        cwd: repositoryRoot,
        // Its own home: Caddy keeps its local authority and certificates there, and never touches
        // this machine's trust store (skip_install_trust in the Caddyfile).
        env: {
          PATH: process.env.PATH,
          HOME: home,
          XDG_DATA_HOME: path.join(home, "data"),
          XDG_CONFIG_HOME: path.join(home, "config"),
          PUNCTUAL_DOMAIN: DOMAIN,
          PUNCTUAL_TLS: "internal",
          PUNCTUAL_UPSTREAM: `127.0.0.1:${api.port}`,
          PUNCTUAL_BIND: "127.0.0.1",
          PUNCTUAL_HTTP_PORT: String(httpPort),
          PUNCTUAL_HTTPS_PORT: String(httpsPort),
          PUNCTUAL_CADDY_ADMIN: "off",
        },
      });
      // Its local authority is made at the start, then the site's certificate; then it answers.
      const root = path.join(home, "data/caddy/pki/authorities/local/root.crt");
      const started = { timeout: 30_000, interval: 50 };
      await vi.waitFor(() => {
        if (!existsSync(root)) throw new Error(`no ${root} yet; Caddy's output:\n${caddy?.output()}`);
      }, started);
      const probe = clientFrom("127.0.0.1");
      await vi.waitFor(async () => {
        const answer = await fetch(https("/healthz"), { dispatcher: probe });
        if (answer.status !== 200) throw new Error(`/healthz answered ${answer.status} through Caddy`);
      }, started);
    }, 90_000);

    afterAll(async () => {
      await Promise.all(agents.map((agent) => agent.close()));
      await caddy?.stop();
      await api?.stop();
      await context?.close();
      if (home) rmSync(home, { recursive: true, force: true });
    });

    it("serves the API over HTTPS with a certificate of Caddy's local authority for the domain", async () => {
      const answer = await fetch(https("/readyz"), { dispatcher: clientFrom("127.0.0.2") });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ status: "ready", postgres: "up", redis: "up" });
      // Without the root, the same request is refused: the certificate is not trusted by accident.
      const untrusted = new Agent({ localAddress: "127.0.0.2", connect: { family: 4 } });
      agents.push(untrusted);
      const refused = await fetch(https("/readyz"), { dispatcher: untrusted }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Error);
      expect(String((refused as Error & { cause?: unknown }).cause)).toMatch(/certificate/i);
    });

    it("redirects HTTP to HTTPS, same host, path and query", async () => {
      const answer = await fetch(`http://${DOMAIN}:${httpPort}/console?from=plain`, {
        dispatcher: clientFrom("127.0.0.2"),
        redirect: "manual",
      });
      expect(answer.status).toBe(308);
      // Caddy names no port: it takes its HTTPS port for the standard one, as with 80 and 443.
      expect(answer.headers.get("location")).toBe(`https://${DOMAIN}/console?from=plain`);
    });

    it("gives the console a Secure __Host- session cookie over HTTPS, and a plain one without the proxy", async () => {
      const signIn = (url: string, dispatcher?: Agent) =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ apiKey: org.apiKey }),
          ...(dispatcher ? { dispatcher } : {}),
        });
      const client = clientFrom("127.0.0.2");
      const secure = await signIn(https("/console/api/session"), client);
      expect(secure.status).toBe(200);
      const [cookie, ...others] = secure.headers.getSetCookie();
      expect(others).toEqual([]);
      expect(cookie).toMatch(new RegExp(`^${SECURE_SESSION_COOKIE}=[^;]+;`));
      const attributes = (cookie ?? "").split(";").map((part) => part.trim().toLowerCase());
      expect(attributes).toEqual(expect.arrayContaining(["secure", "httponly", "path=/", "samesite=strict"]));
      expect(attributes.some((attribute) => attribute.startsWith("domain="))).toBe(false);
      // The cookie opens the session through the proxy.
      const session = await fetch(https("/console/api/session"), {
        headers: { cookie: (cookie ?? "").split(";")[0] ?? "" },
        dispatcher: client,
      });
      expect(session.status).toBe(200);

      // The same API reached directly over HTTP: the plain name, not Secure (it could not be kept).
      const plain = await signIn(`http://127.0.0.1:${api.port}/console/api/session`);
      expect(plain.status).toBe(200);
      const [plainCookie] = plain.headers.getSetCookie();
      expect(plainCookie).toMatch(new RegExp(`^${SESSION_COOKIE}=`));
      expect(plainCookie?.toLowerCase()).not.toContain("secure");
    });

    it("counts each client by its own address through the proxy (TRUST_PROXY), never by one it made up", async () => {
      // Addresses no other test here used, so each starts with a whole budget.
      const first = clientFrom("127.0.0.4");
      const second = clientFrom("127.0.0.5");
      // Without an API key a request counts against its client address (RateLimit-Remaining).
      const remaining = async (client: Agent, headers: Record<string, string> = {}) => {
        const answer = await fetch(https("/api/events"), { dispatcher: client, headers });
        expect(answer.status).toBe(401);
        return Number(answer.headers.get("ratelimit-remaining"));
      };
      const budget = context.config.RATE_LIMIT_PER_MINUTE;
      // A forged X-Forwarded-For: Caddy replaces it with the connection's address.
      expect(await remaining(first, { "x-forwarded-for": "203.0.113.7" })).toBe(budget - 1);
      expect(await remaining(first)).toBe(budget - 2);
      // The second client's budget is its own: the API does not see the proxy's one address.
      expect(await remaining(second)).toBe(budget - 1);

      const prefix = `${context.config.QUEUE_PREFIX}:rate-limit:ip:`;
      const addresses = (await context.redis.keys(`${prefix}*`)).map((key) => key.slice(prefix.length));
      expect(addresses).toEqual(expect.arrayContaining(["127.0.0.4", "127.0.0.5"]));
      expect(addresses).not.toContain("203.0.113.7");
      expect(addresses).not.toContain("203.0.113.7");
    });

    it("keeps /metrics off the proxy, which the API itself still serves", async () => {
      const client = clientFrom("127.0.0.2");
      for (const metricsPath of ["/metrics", "/METRICS", "/metrics/"]) {
        expect((await fetch(https(metricsPath), { dispatcher: client })).status, metricsPath).toBe(404);
      }
      expect((await fetch(`http://127.0.0.1:${api.port}/metrics`)).status).toBe(200);
    });
  },
);

describe("docs/tls.md's plain host commands", () => {
  it("run this Caddyfile with the settings the test gives Caddy", () => {
    expect(plainHost.caddyArgs).toEqual([
      "run",
      "--config",
      path.relative(repositoryRoot, CADDYFILE),
      "--adapter",
      "caddyfile",
    ]);
    expect(plainHost.exported.sort()).toEqual(["PUNCTUAL_DOMAIN", "PUNCTUAL_TLS", "PUNCTUAL_UPSTREAM"]);
  });
});

describe("docker-compose.tls.yml", () => {
  const services = composeServices(COMPOSE_TLS_FILE);

  it("runs Caddy with the Caddyfile the test runs, and gives it every setting the file requires", () => {
    const caddy = services.caddy;
    expect(caddy?.volumes).toContain("./deploy/tls/Caddyfile:/etc/caddy/Caddyfile:ro");
    expect(caddy?.command).toEqual(["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]);
    // Every {$VAR} without a default must come from the compose file.
    const caddyfile = readFileSync(CADDYFILE, "utf8");
    const required = [...caddyfile.matchAll(/\{\$(\w+)\}/g)].map((match) => match[1]);
    expect(required.sort()).toEqual(["PUNCTUAL_DOMAIN", "PUNCTUAL_TLS"]);
    for (const name of required) expect(Object.keys(caddy?.environment ?? {})).toContain(name);
  });

  it("points Caddy at the api service's port, which only Caddy reaches", () => {
    const api = composeServices("docker-compose.yml").api;
    expect(services.caddy?.environment?.PUNCTUAL_UPSTREAM).toBe(`api:${api?.environment?.PORT}`);
    // The base file publishes the API on this machine; with Caddy in front it is not published.
    expect(api?.ports).toEqual(["127.0.0.1:3000:3000"]);
    expect(services.api?.ports).toBe("reset");
    expect(services.api?.environment?.TRUST_PROXY).toBe("1");
  });
});
