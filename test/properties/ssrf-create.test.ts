import { literalHostForbidden, parseDestination, refusedDestinationMessage } from "@punctual/core";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostileApi, send, sendAndCheck, startHostileApi } from "./hostile-support.ts";

// Contract §5: a destination whose host is a literal loopback, private, link-local, metadata (or
// otherwise non-public) address is refused when the event or cron job is created or edited, unless
// ALLOW_PRIVATE_DESTINATIONS=true, as is a well-known loopback name (localhost, *.localhost, …).
// Other names are not resolved here: one that resolves to such an address is refused when it is
// delivered (packages/core/src/destinations.ts, the guarded lookup).

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const TIMEOUT = 120_000;
/** The 400 of a refused destination: the generic words, the host, and the setting that allows it. */
const REFUSED = {
  message: expect.stringMatching(
    /^Destination address is not allowed: \S+ is a .+ unless ALLOW_PRIVATE_DESTINATIONS=true$/,
  ),
};

let strict: HostileApi;
let permissive: HostileApi;

beforeAll(async () => {
  [strict, permissive] = await Promise.all([
    startHostileApi({ ALLOW_PRIVATE_DESTINATIONS: "false" }),
    startHostileApi({ ALLOW_PRIVATE_DESTINATIONS: "true" }),
  ]);
});
afterAll(() => Promise.all([strict.close(), permissive.close()]));

const byte = fc.integer({ min: 0, max: 255 });
const v4 = (a: fc.Arbitrary<number>, b: fc.Arbitrary<number>) =>
  fc.tuple(a, b, byte, byte).map((parts) => parts as [number, number, number, number]);

/** IPv4 addresses that are never a public host. */
const forbiddenV4 = fc.oneof(
  v4(fc.constant(127), byte),
  v4(fc.constant(10), byte),
  v4(fc.constant(172), fc.integer({ min: 16, max: 31 })),
  v4(fc.constant(192), fc.constant(168)),
  v4(fc.constant(169), fc.constant(254)),
  v4(fc.constant(100), fc.integer({ min: 64, max: 127 })),
  v4(fc.constant(0), byte),
  v4(fc.integer({ min: 224, max: 255 }), byte),
  fc.constant([169, 254, 169, 254] as [number, number, number, number]),
);

const hex = (n: number) => n.toString(16);

/** The same address in the spellings a URL parser accepts for it. */
const v4Spelling = ([a, b, c, d]: [number, number, number, number]) =>
  fc.constantFrom(
    `${a}.${b}.${c}.${d}`,
    `${a}.${b}.${c}.${d}.`,
    String(((a << 24) >>> 0) + (b << 16) + (c << 8) + d),
    `0x${hex(a)}.${b}.${c}.${d}`,
    `0${a.toString(8)}.${b}.${c}.${d}`,
    `0x${(((a << 24) | (b << 16) | (c << 8) | d) >>> 0).toString(16)}`,
    `[::ffff:${a}.${b}.${c}.${d}]`,
    `[::ffff:${hex((a << 8) | b)}:${hex((c << 8) | d)}]`,
    `[64:ff9b::${a}.${b}.${c}.${d}]`,
    `[2002:${hex((a << 8) | b)}:${hex((c << 8) | d)}::1]`,
  );

const word = fc.integer({ min: 0, max: 0xffff }).map(hex);
/** IPv6 addresses that are never a public host. */
const forbiddenV6 = fc.oneof(
  fc.constantFrom("[::1]", "[::]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[fd00:ec2::254]"),
  fc.tuple(fc.integer({ min: 0xfc00, max: 0xfdff }), word, word).map(([a, b, c]) => `[${hex(a)}:${b}::${c}]`),
  fc.tuple(fc.integer({ min: 0xfe80, max: 0xfebf }), word).map(([a, b]) => `[${hex(a)}::${b}]`),
  fc.tuple(fc.integer({ min: 0xff00, max: 0xffff }), word).map(([a, b]) => `[${hex(a)}::${b}]`),
);

const forbiddenHost = fc.oneof(forbiddenV4.chain(v4Spelling), forbiddenV6);

/** A destination URL around a host: scheme, user info, port, path, query. */
const urlAround = (host: fc.Arbitrary<string>) =>
  fc
    .tuple(
      fc.constantFrom("http", "https", "HTTP", "hTTps"),
      fc.constantFrom("", "user@", "user:pass@"),
      host,
      fc.constantFrom("", ":80", ":443", ":8080", ":1"),
      fc.constantFrom("", "/", "/hook", "/latest/meta-data/iam", "/?q=1", "/a/../b"),
    )
    .map(([scheme, userinfo, at, port, path]) => `${scheme}://${userinfo}${at}${port}${path}`);

const forbiddenUrl = urlAround(forbiddenHost);
const publicUrl = urlAround(
  fc.constantFrom(
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "[2606:4700:4700::1111]",
    "[2001:4860:4860::8888]",
    "example.com",
  ),
);

const json = (api: HostileApi) => ({ "x-api-key": api.org.apiKey, "content-type": "application/json" });
const eventBody = (destination: string) =>
  JSON.stringify({ payload: "p", destination, scheduledTime: "2030-01-20T00:00:00Z" });
const cronBody = (destination: string) => JSON.stringify({ payload: "p", destination, expression: "0 0 1 1 *" });

describe("destinations refused at create and edit (ALLOW_PRIVATE_DESTINATIONS=false)", () => {
  it(
    "a literal private, loopback, link-local or metadata address, however it is spelled",
    () =>
      fc.assert(
        fc.asyncProperty(forbiddenUrl, fc.integer({ min: 0, max: 3 }), async (destination, target) => {
          const api = strict;
          const [method, path, body] = [
            ["post", "/api/events", eventBody(destination)],
            ["put", `/api/events/${api.eventId}`, JSON.stringify({ destination })],
            ["post", "/api/cronjobs", cronBody(destination)],
            ["put", `/api/cronjobs/${api.cronJobId}`, JSON.stringify({ destination })],
          ][target] as ["post" | "put", string, string];
          const outcome = await sendAndCheck(api, { method, path, headers: json(api), body });
          expect({ destination, status: outcome.status, body: outcome.json }).toEqual({
            destination,
            status: 400,
            body: REFUSED,
          });
        }),
        { numRuns: RUNS * 2 },
      ),
    TIMEOUT,
  );

  it("names the cases of the issue one by one", async () => {
    for (const host of [
      "127.0.0.1",
      "[::1]",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "[::ffff:127.0.0.1]",
    ]) {
      const outcome = await sendAndCheck(strict, {
        method: "post",
        path: "/api/events",
        headers: json(strict),
        body: eventBody(`http://${host}/hook`),
      });
      const literal = host.replace(/^\[|\]$/g, "");
      expect({ host, status: outcome.status, body: outcome.json }).toEqual({
        host,
        status: 400,
        body: { message: refusedDestinationMessage(literal === "::ffff:127.0.0.1" ? "::ffff:7f00:1" : literal) },
      });
    }
  });

  it(
    "accepts public addresses and names (a name is only checked when delivered)",
    () =>
      fc.assert(
        fc.asyncProperty(publicUrl, async (destination) => {
          const outcome = await sendAndCheck(strict, {
            method: "put",
            path: `/api/events/${strict.eventId}`,
            headers: json(strict),
            body: JSON.stringify({ destination }),
          });
          expect({ destination, status: outcome.status }).toEqual({ destination, status: 200 });
        }),
        { numRuns: Math.ceil(RUNS / 3) },
      ),
    TIMEOUT,
  );

  it("accepts a name other than the loopback ones: what it resolves to is judged at delivery", async () => {
    const outcome = await sendAndCheck(strict, {
      method: "post",
      path: "/api/events",
      headers: json(strict),
      body: eventBody("http://intranet.example:8080/hook"),
    });
    expect(outcome.status).toBe(200);
  });

  it("refuses the well-known loopback names (localhost, *.localhost, ip6-localhost, …)", async () => {
    for (const host of ["localhost", "api.localhost", "localhost.localdomain", "ip6-localhost"]) {
      const outcome = await sendAndCheck(strict, {
        method: "post",
        path: "/api/events",
        headers: json(strict),
        body: eventBody(`http://${host}:8080/hook`),
      });
      const literal = host.replace(/^\[|\]$/g, "");
      expect({ host, status: outcome.status, body: outcome.json }).toEqual({
        host,
        status: 400,
        body: { message: refusedDestinationMessage(literal === "::ffff:127.0.0.1" ? "::ffff:7f00:1" : literal) },
      });
    }
  });
});

describe("destinations with ALLOW_PRIVATE_DESTINATIONS=true", () => {
  it(
    "accepts the same literal addresses for events",
    () =>
      fc.assert(
        fc.asyncProperty(forbiddenUrl, async (destination) => {
          const outcome = await sendAndCheck(permissive, {
            method: "put",
            path: `/api/events/${permissive.eventId}`,
            headers: json(permissive),
            body: JSON.stringify({ destination }),
          });
          expect({ destination, status: outcome.status }).toEqual({ destination, status: 200 });
        }),
        { numRuns: Math.ceil(RUNS / 3) },
      ),
    TIMEOUT,
  );

  it("accepts them for cron jobs too", async () => {
    const outcome = await sendAndCheck(permissive, {
      method: "post",
      path: "/api/cronjobs",
      headers: json(permissive),
      body: cronBody("http://127.0.0.1:8080/hook"),
    });
    expect(outcome.status).toBe(200);
  });
});

/**
 * Destination-like text: a scheme-ish prefix (with the extra slashes, backslashes and spaces the
 * URL parser would quietly repair), a host, and a tail of URL punctuation, whitespace and control
 * characters; plus URLs around the length limit and well-formed ones.
 */
const destinationLike = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "http://",
        "https://",
        "HTTP://",
        "http:",
        "http:/",
        "http:///",
        "https:////",
        "http:\\\\",
        "https://\\",
        "http:/\\",
        "http://\\/",
        " http://",
        "\thttps://",
        "ftp://",
        "javascript:",
        "",
      ),
      fc.constantFrom("example.com", "127.0.0.1", "[::1]", "10.0.0.1", "0x7f.1", "8.8.8.8", "", "@", "exa mple.com"),
      fc.string({
        unit: fc.constantFrom(
          "a",
          "/",
          "\\",
          ":",
          "@",
          "?",
          "#",
          "%",
          ".",
          "[",
          "]",
          " ",
          "\t",
          "\n",
          "\u0000",
          "\u007f",
          "é",
          "\u3000",
        ),
        maxLength: 12,
      }),
    )
    .map(([scheme, host, tail]) => `${scheme}${host}${tail}`),
  fc.integer({ min: 2040, max: 2056 }).map((length) => `https://example.com/${"a".repeat(length - 20)}`),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.string({ unit: "binary", maxLength: 30 }),
);

describe("the API judges a destination as the worker does", () => {
  it(
    "accepts it iff parseDestination does (and, when private destinations are not allowed, its host is no forbidden literal)",
    () =>
      fc.assert(
        fc.asyncProperty(
          destinationLike,
          fc.boolean(),
          fc.integer({ min: 0, max: 3 }),
          async (destination, allow, target) => {
            const api = allow ? permissive : strict;
            const [method, path, body] = [
              ["post", "/api/events", eventBody(destination)],
              ["put", `/api/events/${api.eventId}`, JSON.stringify({ destination })],
              ["post", "/api/cronjobs", cronBody(destination)],
              ["put", `/api/cronjobs/${api.cronJobId}`, JSON.stringify({ destination })],
            ][target] as ["post" | "put", string, string];
            const parsed = parseDestination(destination);
            const expected = !parsed.ok
              ? { status: 400, body: { message: parsed.reason } }
              : !allow && literalHostForbidden(parsed.url)
                ? { status: 400, body: REFUSED }
                : { status: 200 };
            const outcome = await sendAndCheck(api, { method, path, headers: json(api), body });
            if (outcome.status === 200 && path === "/api/cronjobs") {
              // An organization may only have a few cron jobs: make room for the next run.
              const { id } = outcome.json as { id: string };
              await send(api.base, { method: "delete", path: `/api/cronjobs/${id}`, headers: json(api) });
            }
            const actual = outcome.status === 200 ? { status: 200 } : { status: outcome.status, body: outcome.json };
            expect({ destination, allow, ...actual }).toEqual({ destination, allow, ...expected });
          },
        ),
        { numRuns: RUNS * 2 },
      ),
    TIMEOUT,
  );

  it("refuses the inputs the URL parser would repair, as the worker does", async () => {
    for (const destination of ["http:///example.com/x", "https://\\example.com/x"]) {
      for (const api of [strict, permissive]) {
        const outcome = await sendAndCheck(api, {
          method: "post",
          path: "/api/events",
          headers: json(api),
          body: eventBody(destination),
        });
        expect({ destination, status: outcome.status, body: outcome.json }).toEqual({
          destination,
          status: 400,
          body: { message: "Destination must be an http or https URL" },
        });
      }
    }
  });
});
