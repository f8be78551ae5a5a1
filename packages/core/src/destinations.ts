import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/** Longest destination URL accepted (contract §3). */
export const DESTINATION_MAX_LENGTH = 2048;
/** Why a destination that is not an absolute http(s) URL is refused (contract §3). */
export const DESTINATION_NOT_HTTP_URL_MESSAGE = "Destination must be an http or https URL";
/** Why a destination longer than DESTINATION_MAX_LENGTH is refused (contract §3). */
const DESTINATION_TOO_LONG_MESSAGE = `Destination must be at most ${DESTINATION_MAX_LENGTH} characters`;

/** The attempt error for a refused destination (contract §5); it names no address on purpose. */
export const FORBIDDEN_DESTINATION_MESSAGE = "Destination address is not allowed";
export const FORBIDDEN_DESTINATION_CODE = "EDESTINATIONFORBIDDEN";

/**
 * Why a destination is refused when it is written (400): its host, a literal address or a name of
 * this machine, is one the worker would refuse, so the answer may say which and what allows it.
 * An attempt's error stays FORBIDDEN_DESTINATION_MESSAGE alone: a name resolved at delivery must
 * read the same whether it was refused or did not resolve.
 */
export function refusedDestinationMessage(host: string): string {
  return (
    `${FORBIDDEN_DESTINATION_MESSAGE}: ${host} is a loopback, private, link-local or reserved address, ` +
    "which this server refuses unless ALLOW_PRIVATE_DESTINATIONS=true"
  );
}

/** The 400 of a destination at 127.0.0.1, as the API reference shows it. */
export const REFUSED_DESTINATION_EXAMPLE = refusedDestinationMessage("127.0.0.1");

/** Raised by the guarded lookup; `code` lets the sender tell it from network errors. */
export class ForbiddenDestinationError extends Error {
  override readonly name = "ForbiddenDestinationError";
  readonly code = FORBIDDEN_DESTINATION_CODE;
  constructor() {
    super(FORBIDDEN_DESTINATION_MESSAGE);
  }
}

/**
 * Error codes of a name that gave no address: getaddrinfo's (Node reports EAI_NONAME and
 * EAI_NODATA as ENOTFOUND, but other resolvers keep them) and c-ares' (`dns.resolve*`).
 */
const UNRESOLVABLE_CODES: ReadonlySet<string> = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EAI_NODATA",
  "EAI_FAIL",
  "EAI_ADDRFAMILY",
  "EAI_FAMILY",
  "ENODATA",
  "ENONAME",
  "ESERVFAIL",
  "EREFUSED",
  "EFORMERR",
  "EBADNAME",
  "EBADRESP",
  "ETIMEOUT",
  "ENOTIMP",
]);

/** The system calls of name resolution: any failure in them is about the name, not a connection. */
const RESOLVER_SYSCALL = /^(getaddrinfo|query)/;

/**
 * True when a delivery error means the destination was refused or its name did not resolve, at any
 * depth of `cause`. Both must read the same to a tenant: otherwise "not allowed" against
 * "ENOTFOUND" tells which names resolve to the worker's private network. Connection errors
 * (ECONNREFUSED, resets, timeouts) only happen once a public address passed the guard, so they
 * are not included.
 */
export function isUnresolvableOrForbidden(error: unknown): boolean {
  // Bounded: a cause chain can be cyclic.
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const { code, syscall } = current as NodeJS.ErrnoException;
    if (code === FORBIDDEN_DESTINATION_CODE || (code !== undefined && UNRESOLVABLE_CODES.has(code))) return true;
    if (syscall !== undefined && RESOLVER_SYSCALL.test(syscall)) return true;
  }
  return false;
}

/**
 * The attempt error to record in place of a delivery error's own text, or null when that text
 * may be recorded as it is: every refused or unresolvable destination reads
 * FORBIDDEN_DESTINATION_MESSAGE.
 */
export function deliveryErrorText(error: unknown): string | null {
  return isUnresolvableOrForbidden(error) ? FORBIDDEN_DESTINATION_MESSAGE : null;
}

/** IPv6 ranges whose last 32 bits are an IPv4 address that decides where packets really go. */
const EMBEDS_IPV4_IN_LAST_32_BITS = new Set(["ipv4Mapped", "rfc6145"]);
/** RFC 6052 well-known NAT64 prefix; the local-use 64:ff9b:1::/48 shares ipaddr's range name. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96");
/** Global unicast IPv6 (RFC 4291 §2.4): anything outside it is not a public host. */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");

/**
 * True when an address must never be a delivery target: loopback, private, link-local (cloud
 * metadata), unique-local, unspecified, carrier-grade NAT, multicast, broadcast, documentation and
 * other reserved ranges. Deny by default: only what ipaddr.js calls plain `unicast` passes, and
 * IPv6 forms that embed an IPv4 address (mapped, translated, NAT64, 6to4) are judged by that IPv4
 * address. Anything that is not a canonical IP address is forbidden too.
 */
export function isForbiddenAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return ipaddr.IPv4.parse(ip).range() !== "unicast";
  if (family !== 6) return true;
  let address: ipaddr.IPv6;
  try {
    address = ipaddr.IPv6.parse(ip);
  } catch {
    return true;
  }
  const range = address.range();
  if (EMBEDS_IPV4_IN_LAST_32_BITS.has(range) || address.match(NAT64_WELL_KNOWN)) {
    return isForbiddenIpv4Bytes(address.toByteArray().slice(12));
  }
  if (range === "6to4") {
    // 2002:AABB:CCDD::/48 tunnels to the IPv4 address AA.BB.CC.DD (RFC 3056).
    return isForbiddenIpv4Bytes(address.toByteArray().slice(2, 6));
  }
  return range !== "unicast" || !address.match(IPV6_GLOBAL_UNICAST);
}

function isForbiddenIpv4Bytes(bytes: number[]): boolean {
  return new ipaddr.IPv4(bytes).range() !== "unicast";
}

type ParsedDestination = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * Checks that a destination is an absolute http or https URL of at most 2048 characters. The raw
 * text must already be in that form: the WHATWG parser would otherwise quietly repair inputs such
 * as " http:example.com" into something the client never wrote.
 */
export function parseDestination(url: string): ParsedDestination {
  if (url.length > DESTINATION_MAX_LENGTH) return { ok: false, reason: DESTINATION_TOO_LONG_MESSAGE };
  const invalid = { ok: false, reason: DESTINATION_NOT_HTTP_URL_MESSAGE } as const;
  // Whitespace and control characters would be stripped or percent-encoded by the parser, and
  // extra slashes or backslashes after the scheme would be read as if they were not there.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point.
  if (!/^https?:\/\/[^/\\\s\u0000-\u001f\u007f][^\s\u0000-\u001f\u007f]*$/i.test(url)) return invalid;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return invalid;
  }
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.hostname === "") return invalid;
  return { ok: true, url: parsed };
}

/** Names that mean this very machine wherever they are resolved (RFC 6761 and the usual hosts files). */
const LOOPBACK_NAMES: ReadonlySet<string> = new Set([
  "localhost",
  "localhost.localdomain",
  "localhost4",
  "localhost4.localdomain4",
  "localhost6",
  "localhost6.localdomain6",
  "ip6-localhost",
  "ip6-loopback",
]);

/**
 * True when the URL's host is a well-known name of the loopback interface: those above, and any
 * name under `.localhost` (RFC 6761), with or without the root's trailing dot. The URL parser has
 * already lowercased the host and decoded any percent-escapes in it.
 */
export function isLoopbackName(url: URL): boolean {
  const name = url.hostname.endsWith(".") ? url.hostname.slice(0, -1) : url.hostname;
  return LOOPBACK_NAMES.has(name) || name.endsWith(".localhost");
}

/**
 * Everything that can be decided about a destination without resolving it: `parseDestination`,
 * then, unless private destinations are allowed, the literal-address rule and the loopback names.
 * The API refuses at create and edit exactly what the worker refuses before sending, with the
 * same reason.
 */
export function checkDestination(url: string, allowPrivate: boolean): ParsedDestination {
  const parsed = parseDestination(url);
  if (parsed.ok && !allowPrivate && (literalHostForbidden(parsed.url) || isLoopbackName(parsed.url))) {
    return { ok: false, reason: FORBIDDEN_DESTINATION_MESSAGE };
  }
  return parsed;
}

/**
 * The host of a URL when it is an IP literal (IPv6 without its brackets), else null. The WHATWG
 * parser has already turned forms such as `0x7f.1` or `2130706433` into dotted decimal.
 */
export function literalHostAddress(url: string | URL): string | null {
  let hostname: string;
  try {
    hostname = (typeof url === "string" ? new URL(url) : url).hostname;
  } catch {
    return null;
  }
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

/**
 * True when the URL's host is a forbidden IP literal. Used to refuse such destinations when they
 * are created, and before sending, because Node connects to a literal without calling `lookup`.
 */
export function literalHostForbidden(url: string | URL): boolean {
  const address = literalHostAddress(url);
  return address !== null && isForbiddenAddress(address);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Same call shapes as `dns.lookup`, and usable as the `lookup` option of `net`, `http` and `https`. */
export interface GuardedLookup {
  (hostname: string, callback: LookupCallback): void;
  (hostname: string, options: LookupOptions | number, callback: LookupCallback): void;
}

/**
 * The resolver under the guard: `dns.lookup` called with `all: true`. Injectable so a test can
 * answer with addresses a real name server would not give it (one public, one private).
 */
export type AddressResolver = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `dns.lookup` that refuses a host when ANY of its addresses is forbidden (contract §5), unless
 * private destinations are allowed. Checking every address, at connect time, closes both the
 * "one public, one private record" trick and DNS rebinding between a check and the connection.
 * Only addresses from the checked answer are ever handed back, so the socket cannot connect to an
 * address that was not checked: the single-address form gets the first of them, `all: true` gets
 * the very list that was checked.
 */
export function createGuardedLookup(allowPrivate: boolean, resolve: AddressResolver = dnsLookup): GuardedLookup {
  return (
    hostname: string,
    optionsOrCallback: LookupOptions | number | LookupCallback,
    maybeCallback?: LookupCallback,
  ) => {
    const callback = typeof optionsOrCallback === "function" ? optionsOrCallback : maybeCallback;
    if (!callback) throw new TypeError("lookup needs a callback");
    const options: LookupOptions =
      typeof optionsOrCallback === "number"
        ? { family: optionsOrCallback }
        : typeof optionsOrCallback === "object"
          ? optionsOrCallback
          : {};
    const fail = (error: NodeJS.ErrnoException) => callback(error, options.all ? [] : "", undefined);
    // Always ask for every address so none escapes the check, then answer in the shape requested.
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        fail(error);
        return;
      }
      const [first] = addresses;
      if (!first) {
        // An empty answer would leave net or undici to fail in their own words; say it as getaddrinfo would.
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = "ENOTFOUND";
        notFound.syscall = "getaddrinfo";
        fail(notFound);
        return;
      }
      // `.some`, never `.every`: one forbidden address among public ones is enough to refuse.
      if (!allowPrivate && addresses.some((entry) => isForbiddenAddress(entry.address))) {
        fail(new ForbiddenDestinationError());
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}
