import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { request } from "node:http";
import { type AddressInfo, connect, createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AddressResolver,
  checkDestination,
  createGuardedLookup,
  deliveryErrorText,
  FORBIDDEN_DESTINATION_CODE,
  FORBIDDEN_DESTINATION_MESSAGE,
  ForbiddenDestinationError,
  type GuardedLookup,
  isForbiddenAddress,
  isLoopbackName,
  isUnresolvableOrForbidden,
  literalHostAddress,
  literalHostForbidden,
  parseDestination,
} from "./destinations.ts";

describe("isForbiddenAddress", () => {
  it.each([
    ["127.0.0.1", "IPv4 loopback"],
    ["127.255.255.254", "the far end of 127/8"],
    ["::1", "IPv6 loopback"],
    ["10.0.0.1", "private 10/8"],
    ["172.16.0.1", "private 172.16/12, low end"],
    ["172.31.255.255", "private 172.16/12, high end"],
    ["192.168.1.1", "private 192.168/16"],
    ["169.254.169.254", "cloud metadata"],
    ["169.254.0.1", "IPv4 link-local"],
    ["fe80::1", "IPv6 link-local"],
    ["fe80::1%eth0", "IPv6 link-local with a zone, as dns.lookup may return it"],
    ["fc00::1", "unique-local fc00::/7"],
    ["fd12:3456:789a::1", "unique-local fd00::/8"],
    ["fd00:ec2::254", "AWS IPv6 metadata"],
    ["0.0.0.0", "IPv4 unspecified"],
    ["0.1.2.3", "this network 0/8"],
    ["::", "IPv6 unspecified"],
    ["100.64.0.1", "carrier-grade NAT, low end"],
    ["100.127.255.254", "carrier-grade NAT, high end"],
    ["224.0.0.1", "IPv4 multicast"],
    ["239.255.255.250", "IPv4 multicast (SSDP)"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved 240/4"],
    ["192.0.2.10", "documentation TEST-NET-1"],
    ["198.18.0.1", "benchmarking"],
    ["ff02::1", "IPv6 multicast"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:7f00:1", "IPv4-mapped loopback in hex"],
    ["::ffff:169.254.169.254", "IPv4-mapped metadata"],
    ["::ffff:10.1.2.3", "IPv4-mapped private"],
    ["::ffff:0:127.0.0.1", "IPv4-translated loopback (RFC 6145)"],
    ["64:ff9b::127.0.0.1", "NAT64 of loopback"],
    ["64:ff9b::a9fe:a9fe", "NAT64 of metadata, in hex"],
    ["64:ff9b:1::1", "local-use NAT64 prefix"],
    ["2002:7f00:1::1", "6to4 of loopback"],
    ["2002:c0a8:101::1", "6to4 of 192.168.1.1"],
    ["::127.0.0.1", "deprecated IPv4-compatible form"],
    ["2001:db8::1", "IPv6 documentation"],
    ["2001::1", "Teredo"],
    ["100::1", "IPv6 discard"],
    ["fec0::1", "deprecated site-local"],
    ["localhost", "a name, not an address"],
    ["", "empty"],
    ["0127.0.0.1", "octal-looking IPv4 that some parsers read as 87.0.0.1"],
    ["2130706433", "integer IPv4"],
    ["[::1]", "bracketed IPv6"],
  ])("forbids %s (%s)", (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each([
    ["8.8.8.8", "public IPv4"],
    ["93.184.215.14", "public IPv4"],
    ["172.15.255.255", "just below 172.16/12"],
    ["172.32.0.1", "just above 172.16/12"],
    ["100.63.255.255", "just below carrier-grade NAT"],
    ["100.128.0.1", "just above carrier-grade NAT"],
    ["169.253.255.255", "just below link-local"],
    ["2606:4700:4700::1111", "public IPv6"],
    ["2a00:1450:4001:82b::200e", "public IPv6"],
    ["::ffff:8.8.8.8", "IPv4-mapped public"],
    ["64:ff9b::8.8.8.8", "NAT64 of a public address"],
    ["2002:808:808::1", "6to4 of 8.8.8.8"],
  ])("allows %s (%s)", (ip) => {
    expect(isForbiddenAddress(ip)).toBe(false);
  });
});

describe("parseDestination", () => {
  it.each([
    "http://example.com",
    "https://example.com/hooks/punctual?x=1#frag",
    "HTTPS://Example.COM:8443/path",
    "http://user:pass@example.com/",
    "http://127.0.0.1:3000/hook",
    "http://[::1]:3000/hook",
    `https://example.com/${"a".repeat(2048 - "https://example.com/".length)}`,
  ])("accepts %s", (url) => {
    const result = parseDestination(url);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.url).toBeInstanceOf(URL);
  });

  it.each([
    ["", "empty"],
    ["example.com/hook", "no scheme"],
    ["/relative/path", "relative"],
    ["ftp://example.com/", "another scheme"],
    ["javascript:alert(1)", "script URL"],
    ["file:///etc/passwd", "file URL"],
    ["http:example.com", "no slashes, which the parser would repair"],
    ["http:///example.com", "an extra slash"],
    ["http:\\\\example.com", "backslashes"],
    [" http://example.com", "leading space"],
    ["http://example.com/a b", "inner space"],
    ["http://exa\nmple.com", "newline"],
    ["http://", "no host"],
    ["http://exa mple.com", "space in host"],
  ])("refuses %j (%s)", (url) => {
    expect(parseDestination(url)).toEqual({ ok: false, reason: "Destination must be an http or https URL" });
  });

  it("refuses a URL longer than 2048 characters", () => {
    const url = `https://example.com/${"a".repeat(2049 - "https://example.com/".length)}`;
    expect(parseDestination(url)).toEqual({ ok: false, reason: "Destination must be at most 2048 characters" });
  });
});

describe("checkDestination", () => {
  it("gives parseDestination's reason for a malformed or too long URL, whatever the setting", () => {
    for (const allowPrivate of [false, true]) {
      expect(checkDestination("http:///example.com/x", allowPrivate)).toEqual({
        ok: false,
        reason: "Destination must be an http or https URL",
      });
      expect(checkDestination(`https://example.com/${"a".repeat(2048)}`, allowPrivate)).toEqual({
        ok: false,
        reason: "Destination must be at most 2048 characters",
      });
    }
  });

  it("refuses a forbidden literal host only when private destinations are not allowed", () => {
    expect(checkDestination("http://[::ffff:127.0.0.1]/hook", false)).toEqual({
      ok: false,
      reason: FORBIDDEN_DESTINATION_MESSAGE,
    });
    expect(checkDestination("http://[::ffff:127.0.0.1]/hook", true)).toMatchObject({ ok: true });
    // Any other name is only judged by the guarded lookup, when it is delivered.
    expect(checkDestination("http://intranet.example/hook", false)).toMatchObject({ ok: true });
  });

  it("refuses a well-known loopback name only when private destinations are not allowed", () => {
    for (const host of [
      "localhost",
      "LocalHost",
      "localhost.",
      "x.localhost",
      "localhost.localdomain",
      "ip6-localhost",
      "ip6-loopback",
      "localhost6.localdomain6",
    ]) {
      expect({ host, checked: checkDestination(`http://${host}:8080/hook`, false) }).toEqual({
        host,
        checked: { ok: false, reason: FORBIDDEN_DESTINATION_MESSAGE },
      });
      expect(checkDestination(`http://${host}:8080/hook`, true)).toMatchObject({ ok: true });
    }
  });
});

describe("isLoopbackName", () => {
  it("is true for the loopback names and false for names that only contain one", () => {
    const loopback = (url: string) => isLoopbackName(new URL(url));
    expect(loopback("http://localhost/")).toBe(true);
    expect(loopback("http://a.b.localhost./")).toBe(true);
    expect(loopback("http://%6Cocalhost/")).toBe(true);
    expect(loopback("http://localhost.example.com/")).toBe(false);
    expect(loopback("http://notlocalhost/")).toBe(false);
    expect(loopback("http://127.0.0.1/")).toBe(false);
  });
});

describe("literalHostForbidden", () => {
  it.each([
    ["http://127.0.0.1/hook", true],
    ["http://127.1/hook", true],
    ["http://0x7f000001/hook", true],
    ["http://2130706433/hook", true],
    ["http://017700000001/hook", true],
    ["http://[::1]:8080/hook", true],
    ["http://[::ffff:127.0.0.1]/hook", true],
    ["http://169.254.169.254/latest/meta-data/", true],
    ["http://0.0.0.0:3000/", true],
    ["https://8.8.8.8/hook", false],
    ["https://[2606:4700:4700::1111]/hook", false],
    ["https://example.com/hook", false],
    ["http://localhost:3000/hook", false], // a name: the guarded lookup decides
    ["not a url", false],
  ])("%s → %s", (url, forbidden) => {
    expect(literalHostForbidden(url)).toBe(forbidden);
  });

  it("reports the literal address without IPv6 brackets", () => {
    expect(literalHostAddress("http://[::1]:3000/")).toBe("::1");
    expect(literalHostAddress(new URL("http://0x7f.1/"))).toBe("127.0.0.1");
    expect(literalHostAddress("http://example.com/")).toBeNull();
  });
});

type LookupResult = {
  error: NodeJS.ErrnoException | null;
  address: string | LookupAddress[];
  family: number | undefined;
};

function lookupWith(
  lookup: GuardedLookup,
  hostname: string,
  options?: Parameters<GuardedLookup>[1] & object,
): Promise<LookupResult> {
  return new Promise((resolve) => {
    const done = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) =>
      resolve({ error, address, family });
    if (options === undefined) lookup(hostname, done);
    else lookup(hostname, options, done);
  });
}

describe("createGuardedLookup", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it("refuses localhost, in the callback form and with all: true", async () => {
    const lookup = createGuardedLookup(false);

    for (const result of [
      await lookupWith(lookup, "localhost"),
      await lookupWith(lookup, "localhost", { all: true }),
    ]) {
      expect(result.error?.message).toBe(FORBIDDEN_DESTINATION_MESSAGE);
      expect(result.error?.code).toBe(FORBIDDEN_DESTINATION_CODE);
    }
  });

  it("refuses a forbidden literal and passes a public one, in the shape asked for", async () => {
    const lookup = createGuardedLookup(false);

    expect((await lookupWith(lookup, "169.254.169.254")).error?.code).toBe(FORBIDDEN_DESTINATION_CODE);
    expect(await lookupWith(lookup, "93.184.215.14")).toEqual({ error: null, address: "93.184.215.14", family: 4 });
    expect(await lookupWith(lookup, "93.184.215.14", { all: true })).toEqual({
      error: null,
      address: [{ address: "93.184.215.14", family: 4 }],
      family: undefined,
    });
    expect(await lookupWith(lookup, "2606:4700:4700::1111", { family: 6 })).toEqual({
      error: null,
      address: "2606:4700:4700::1111",
      family: 6,
    });
  });

  it("resolves localhost normally when private destinations are allowed", async () => {
    const lookup = createGuardedLookup(true);

    const single = await lookupWith(lookup, "localhost");
    expect(single.error).toBeNull();
    expect(isForbiddenAddress(String(single.address))).toBe(true);
    const all = await lookupWith(lookup, "localhost", { all: true });
    expect(Array.isArray(all.address) && all.address.length > 0).toBe(true);
  });

  it("passes on resolver errors unchanged", async () => {
    const result = await lookupWith(createGuardedLookup(false), "no-such-host.invalid");
    expect(result.error?.code).toMatch(/^E(NOTFOUND|AI_AGAIN)$/);
  });

  it("stops a real socket from connecting to localhost when used as net's lookup", async () => {
    let connections = 0;
    const server = createServer((socket) => {
      connections += 1;
      socket.end();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;

    const attempt = (allowPrivate: boolean) =>
      new Promise<NodeJS.ErrnoException | null>((resolve) => {
        const socket = connect({ host: "localhost", port, family: 4, lookup: createGuardedLookup(allowPrivate) });
        socket.once("connect", () => {
          socket.end();
          resolve(null);
        });
        socket.once("error", (error) => resolve(error));
      });

    const refused = await attempt(false);
    expect(refused?.message).toBe(FORBIDDEN_DESTINATION_MESSAGE);
    expect(refused?.code).toBe(FORBIDDEN_DESTINATION_CODE);
    expect(connections).toBe(0);

    expect(await attempt(true)).toBeNull();
    await expect.poll(() => connections).toBe(1);
  });
});

/** A resolver that answers every name with these addresses, as `dns.lookup` with `all: true` would. */
function answering(addresses: string[], asked: LookupOptions[] = []): AddressResolver {
  return (_hostname, options, callback) => {
    asked.push(options);
    const entries = addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    setImmediate(() => callback(null, entries));
  };
}

describe("createGuardedLookup with a given resolver", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  /** Every call shape of `dns.lookup` that net, http, got and undici use. */
  const shapes: [string, Parameters<GuardedLookup>[1] | undefined][] = [
    ["no options", undefined],
    ["all: true", { all: true }],
    ["all: false", { all: false }],
    ["family: 4", { family: 4 }],
    ["family as a number", 0],
    ["all: true with hints", { all: true, hints: 0, family: 0 }],
  ];

  it.each([
    [["93.184.216.34", "127.0.0.1"]],
    [["127.0.0.1", "93.184.216.34"]],
    [["8.8.8.8", "1.1.1.1", "169.254.169.254"]],
    [["2606:4700:4700::1111", "fd00:ec2::254"]],
    [["93.184.216.34", "::ffff:10.0.0.1"]],
  ])("refuses a name whose answer %j mixes public and private addresses, in every call shape", async (addresses) => {
    const lookup = createGuardedLookup(false, answering(addresses));
    for (const [shape, options] of shapes) {
      const result = await lookupWith(lookup, "mixed.example", options as never);
      const wantsAll = typeof options === "object" && options.all === true;
      expect({ shape, code: result.error?.code, address: result.address }).toEqual({
        shape,
        code: FORBIDDEN_DESTINATION_CODE,
        address: wantsAll ? [] : "",
      });
    }
  });

  it("hands back only the addresses it checked, in the shape asked for", async () => {
    const asked: LookupOptions[] = [];
    const lookup = createGuardedLookup(false, answering(["93.184.216.34", "2606:4700:4700::1111"], asked));

    expect(await lookupWith(lookup, "public.example")).toEqual({ error: null, address: "93.184.216.34", family: 4 });
    expect(await lookupWith(lookup, "public.example", { all: true })).toEqual({
      error: null,
      address: [
        { address: "93.184.216.34", family: 4 },
        { address: "2606:4700:4700::1111", family: 6 },
      ],
      family: undefined,
    });
    expect(await lookupWith(lookup, "public.example", { family: 6 })).toMatchObject({ error: null, family: 4 });
    // The resolver is always asked for every address, with the caller's other options kept.
    expect(asked).toEqual([{ all: true }, { all: true }, { family: 6, all: true }]);
  });

  it("answers an empty resolution as not found", async () => {
    const lookup = createGuardedLookup(true, answering([]));
    for (const [, options] of shapes) {
      expect((await lookupWith(lookup, "empty.example", options as never)).error?.code).toBe("ENOTFOUND");
    }
  });

  it("uses the real dns.lookup when no resolver is given", async () => {
    const lookup = createGuardedLookup(true);
    const expected = await new Promise<string>((resolve, reject) =>
      dnsLookup("localhost", { all: true }, (error, addresses) =>
        error ? reject(error) : resolve(addresses.map((entry) => entry.address).join()),
      ),
    );
    const result = await lookupWith(lookup, "localhost", { all: true });
    expect((result.address as LookupAddress[]).map((entry) => entry.address).join()).toBe(expected);
  });

  it("keeps real sockets (net with and without Happy Eyeballs, http) from a mixed name, and connects to the checked one", async () => {
    let connections = 0;
    const server = createServer((socket) => {
      connections += 1;
      socket.end();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;

    const viaNet = (lookup: GuardedLookup, autoSelectFamily: boolean) =>
      new Promise<NodeJS.ErrnoException | null>((resolve) => {
        const socket = connect({ host: "mixed.example", port, lookup, autoSelectFamily });
        socket.once("connect", () => {
          socket.end();
          resolve(null);
        });
        socket.once("error", resolve);
      });
    const viaHttp = (lookup: GuardedLookup) =>
      new Promise<NodeJS.ErrnoException | null>((resolve) => {
        const call = request({ host: "mixed.example", port, method: "POST", lookup, agent: false }, (response) => {
          response.resume();
          resolve(null);
        });
        call.once("error", resolve);
        call.end();
      });

    // A guard that refused only names whose every address is private would pass this answer, and
    // the socket would connect to 127.0.0.1.
    const mixed = createGuardedLookup(false, answering(["127.0.0.1", "93.184.216.34"]));
    for (const attempt of [() => viaNet(mixed, true), () => viaNet(mixed, false), () => viaHttp(mixed)]) {
      expect((await attempt())?.code).toBe(FORBIDDEN_DESTINATION_CODE);
      expect(connections).toBe(0);
    }

    // Allowed, the socket goes to the address the resolver gave, not to anything the name means.
    const loopback = createGuardedLookup(true, answering(["127.0.0.1"]));
    expect(await viaNet(loopback, true)).toBeNull();
    expect(await viaNet(loopback, false)).toBeNull();
    await expect.poll(() => connections).toBe(2);
  });
});

/** A real error from connecting to `port` on loopback. */
function connectError(port: number): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      reject(new Error("connected"));
    });
    socket.once("error", resolve);
  });
}

/** A real error from a name that never resolves (RFC 6761 reserves `.invalid`). */
function resolverError(): Promise<NodeJS.ErrnoException> {
  return new Promise((resolve, reject) =>
    dnsLookup("nothing.invalid", (error) => (error ? resolve(error) : reject(new Error("resolved")))),
  );
}

describe("isUnresolvableOrForbidden and deliveryErrorText", () => {
  it("read a refused and an unresolvable destination the same", async () => {
    const notFound = await resolverError();
    expect(notFound.code).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
    for (const error of [
      new ForbiddenDestinationError(),
      notFound,
      // got and fetch wrap the resolver's error.
      new Error("fetch failed", { cause: notFound }),
      new Error("request failed", { cause: new Error("connect failed", { cause: new ForbiddenDestinationError() }) }),
    ]) {
      expect(isUnresolvableOrForbidden(error)).toBe(true);
      expect(deliveryErrorText(error)).toBe(FORBIDDEN_DESTINATION_MESSAGE);
    }
  });

  it.each(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL", "ENODATA", "ESERVFAIL", "ETIMEOUT"])(
    "hides the resolver code %s",
    (code) => {
      const withSyscall = Object.assign(new Error(`getaddrinfo ${code} host.example`), {
        code,
        syscall: "getaddrinfo",
      });
      const codeOnly = Object.assign(new Error(`${code} host.example`), { code });
      expect(deliveryErrorText(withSyscall)).toBe(FORBIDDEN_DESTINATION_MESSAGE);
      expect(deliveryErrorText(codeOnly)).toBe(FORBIDDEN_DESTINATION_MESSAGE);
    },
  );

  it("hides any getaddrinfo or DNS query failure, whatever its code", () => {
    const lookupFailed = Object.assign(new Error("getaddrinfo EAI_SYSTEM x"), {
      code: "EAI_SYSTEM",
      syscall: "getaddrinfo",
    });
    const queryFailed = Object.assign(new Error("queryA ECONNREFUSED x"), { code: "ECONNREFUSED", syscall: "queryA" });
    expect(deliveryErrorText(lookupFailed)).toBe(FORBIDDEN_DESTINATION_MESSAGE);
    expect(deliveryErrorText(queryFailed)).toBe(FORBIDDEN_DESTINATION_MESSAGE);
  });

  it("leaves real network errors to be told as they are", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await connectError(port);
    expect(refused.code).toBe("ECONNREFUSED");

    const resetting = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetting.listen(0, "127.0.0.1", resolve));
    const reset = await new Promise<NodeJS.ErrnoException>((resolve) => {
      const call = request({ host: "127.0.0.1", port: (resetting.address() as AddressInfo).port, agent: false });
      call.once("error", resolve);
      call.end();
    });
    await new Promise((resolve) => resetting.close(resolve));
    expect(reset.code).toBe("ECONNRESET");

    const timedOut = Object.assign(new Error("connect ETIMEDOUT 93.184.216.34:443"), {
      code: "ETIMEDOUT",
      syscall: "connect",
    });
    for (const error of [refused, reset, timedOut, new Error("fetch failed", { cause: refused }), "text", null]) {
      expect(isUnresolvableOrForbidden(error)).toBe(false);
      expect(deliveryErrorText(error)).toBeNull();
    }
  });
});
