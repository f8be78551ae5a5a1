import ipaddr from "ipaddr.js";

/**
 * The rate-limit subject of a request that has no valid API key: its client address (`req.ip`,
 * which honours the app's `trust proxy` setting). An IPv4-mapped IPv6 address counts as its IPv4
 * address; any other IPv6 address counts as its /64, because one client usually holds a whole /64
 * and could otherwise rotate addresses to escape the limit.
 */
export function clientAddressSubject(ip: string | undefined): string {
  if (!ip) return "ip:unknown";
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(ip);
  } catch {
    return `ip:${ip}`;
  }
  if (address.kind() === "ipv6") {
    const v6 = address as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return `ip:${v6.toIPv4Address().toString()}`;
    const prefix = v6.parts.slice(0, 4).map((part) => part.toString(16));
    return `ip:${prefix.join(":")}::/64`;
  }
  return `ip:${address.toString()}`;
}
