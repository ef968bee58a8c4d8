import { z } from 'zod';

/**
 * Which peer addresses may be dialled (docs/security.md, "Peer addresses"): a node's advertised
 * peer address is dialled by every other agent with a signed question, so an enrolled node
 * could otherwise point its peers at any service on their network. The server accepts, and
 * every agent dials, only an IP literal whose host equals the address the node registered from
 * or lies inside a declared peer network. Pure: the server and the agents run this one check.
 */

/** An IP network: the address as 4 (IPv4) or 16 (IPv6) bytes and its prefix length. */
export interface Cidr {
  text: string;
  bytes: number[];
  prefix: number;
}

/** Loopback: what the default allows besides the registration source. */
export const LOOPBACK_NETWORKS = ['127.0.0.0/8', '::1/128'];

function ipv4(s: string): number[] | undefined {
  const parts = s.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.map(Number);
}

function ipv6(s: string): number[] | undefined {
  // An IPv4 tail (::ffff:10.0.0.1) becomes two groups.
  const tail = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  let text = s;
  if (tail) {
    const v4 = ipv4(tail[2]!);
    if (!v4) return undefined;
    text = `${tail[1]}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 255]);
}

/** The bytes of an IP literal (IPv4-mapped IPv6 as IPv4, as a dual-stack socket reports it), or undefined. */
export function ipBytes(s: string): number[] | undefined {
  const v4 = ipv4(s);
  if (v4) return v4;
  const v6 = ipv6(s);
  if (!v6) return undefined;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 255 && v6[11] === 255;
  return mapped ? v6.slice(12) : v6;
}

export function parseCidr(text: string): Cidr | undefined {
  const [addr, len, extra] = text.trim().split('/');
  if (addr === undefined || extra !== undefined) return undefined;
  const bytes = ipBytes(addr);
  if (!bytes) return undefined;
  const max = bytes.length * 8;
  if (len !== undefined && !/^\d{1,3}$/.test(len)) return undefined;
  const prefix = len === undefined ? max : Number(len);
  if (prefix > max) return undefined;
  return { text: text.trim(), bytes, prefix };
}

/** `--peer-networks CIDR,...` (flags, env, config files): every entry a valid network. */
export const peerNetworksSchema = z
  .string()
  .transform((s, ctx) => {
    const out: Cidr[] = [];
    for (const item of s.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
      const c = parseCidr(item);
      if (!c) {
        ctx.addIssue({ code: 'custom', message: `${item} is not an IP network (CIDR such as 10.0.0.0/24 or fd00::/64)` });
        return z.NEVER;
      }
      out.push(c);
    }
    return out;
  });

export function inNetwork(bytes: readonly number[], net: Cidr): boolean {
  if (bytes.length !== net.bytes.length) return false;
  for (let bit = 0; bit < net.prefix; bit++) {
    const i = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((bytes[i]! & mask) !== (net.bytes[i]! & mask)) return false;
  }
  return true;
}

/** The host of `host:port` or `[v6]:port`, or undefined when it is neither. */
export function peerHost(address: string): string | undefined {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(address) ?? /^([^:[\]]+):(\d{1,5})$/.exec(address);
  return m && Number(m[2]) <= 65_535 ? m[1] : undefined;
}

/**
 * Why `address` may not be dialled as a peer, or undefined when it may: '' (no endpoint) is
 * fine; otherwise its host must be an IP literal equal to `registeredFrom` (the source address
 * the server saw the node register from) or inside one of `networks`.
 */
export function peerAddressProblem(address: string, opts: { networks: readonly Cidr[]; registeredFrom?: string | undefined }): string | undefined {
  if (address === '') return undefined;
  const host = peerHost(address);
  if (host === undefined) return `${address} is not HOST:PORT`;
  const bytes = ipBytes(host);
  if (!bytes) return `${host} is not an IP address (a name could resolve to anything)`;
  const from = opts.registeredFrom === undefined ? undefined : ipBytes(opts.registeredFrom);
  if (from && from.length === bytes.length && from.every((b, i) => b === bytes[i])) return undefined;
  if (opts.networks.some((n) => inNetwork(bytes, n))) return undefined;
  const nets = opts.networks.map((n) => n.text).join(', ') || 'none';
  return `${host} is neither the address the node registered from (${opts.registeredFrom ?? 'unknown'}) nor inside a peer network (${nets})`;
}

/** The default networks, parsed. */
export function loopbackNetworks(): Cidr[] {
  return LOOPBACK_NETWORKS.map((t) => parseCidr(t)!);
}
