import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/** Addresses a tenant's upstream may not reach unless the operator allows it: loopback, link-local, private, CGNAT, unspecified. */
const internal = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const)
  internal.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  internal.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address of an IPv4-mapped IPv6 address, in either spelling (`::ffff:127.0.0.1`, or `::ffff:7f00:1` as URL writes it). */
function mappedIPv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  if (!lower.startsWith('::ffff:')) return undefined;
  const rest = lower.slice('::ffff:'.length);
  if (isIP(rest) === 4) return rest;
  const groups = rest.split(':');
  if (groups.length !== 2 || !groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  const [hi, lo] = groups.map((g) => parseInt(g, 16));
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** Whether an IP address is internal (an IPv4-mapped IPv6 address counts as its IPv4 address). */
export function isInternalAddress(address: string): boolean {
  const mapped = mappedIPv4(address);
  if (mapped) return internal.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return false;
  return internal.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The internal address an upstream URL's host resolves to, or undefined when every address it
 * resolves to is public. A host that does not resolve is left to the request (a 502 naming it).
 */
export async function internalAddressOf(url: string): Promise<string | undefined> {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) return isInternalAddress(host) ? host : undefined;
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    return undefined;
  }
  return addresses.find((a) => isInternalAddress(a.address))?.address;
}
