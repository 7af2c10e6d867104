import { lookup as dnsLookup, Resolver } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { RefusalKind } from './metrics';

/**
 * Rules for connections the platform makes on a caller's behalf (the sandbox egress proxy, MCP
 * servers over HTTP, webhooks): public addresses only, minus the platform's own endpoints, plus
 * the private hosts an operator lists. Names are resolved here and the connection goes to the
 * address that was checked, so DNS tricks (rebinding, a name for 127.0.0.1) do not get around it.
 */

const NON_PUBLIC_V4 = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const;

const NON_PUBLIC_V6 = [
  ['::', 128],
  ['::1', 128],
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const;

const nonPublic = new BlockList();
for (const [net, prefix] of NON_PUBLIC_V4) nonPublic.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of NON_PUBLIC_V6) nonPublic.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), if any. */
function embeddedV4(ip: string): string | undefined {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const words = expandV6(lower);
  if (!words) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (deprecated compatible), ::ffff:0:a.b.c.d (SIIT), 64:ff9b::a.b.c.d
  if (words.slice(0, 5).every((w) => w === 0) && (words[5] === 0xffff || words[5] === 0))
    return v4(words[6]!, words[7]!);
  if (words.slice(0, 4).every((w) => w === 0) && words[4] === 0xffff && words[5] === 0) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0))
    return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!); // 6to4
  return undefined;
}

function expandV6(ip: string): number[] | undefined {
  if (isIP(ip) !== 6) return undefined;
  let text = ip.split('%')[0]!;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const parse = (s: string | undefined) => (s ? s.split(':').map((w) => parseInt(w, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const zeros = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...zeros, ...right];
}

/** Whether an address is a public unicast address (not loopback, private, link-local...). */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return false;
  if (family === 6) {
    const v4 = embeddedV4(ip);
    if (v4 !== undefined) return isPublicAddress(v4);
    return !nonPublic.check(ip.split('%')[0]!, 'ipv6');
  }
  return !nonPublic.check(ip, 'ipv4');
}

interface HostRule {
  host?: string;
  /** The CIDR, ready to check addresses against. */
  subnet?: BlockList;
  port?: number;
}

/** Parses `host`, `host:port`, `[v6]:port`, or a CIDR; throws with what is wrong. */
export function parseHostRule(text: string): HostRule {
  const cidr = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(text);
  if (cidr) {
    const family = isIP(cidr[1]!);
    const prefix = Number(cidr[2]);
    if (!family || prefix > (family === 4 ? 32 : 128)) throw new Error(`${text} is not a valid CIDR`);
    const subnet = new BlockList();
    subnet.addSubnet(cidr[1]!, prefix, family === 4 ? 'ipv4' : 'ipv6');
    return { subnet };
  }
  const bracketed = /^\[([0-9a-fA-F:.]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) return { host: bracketed[1]!.toLowerCase(), port: bracketed[2] ? Number(bracketed[2]) : undefined };
  if (isIP(text) === 6) return { host: text.toLowerCase() };
  const hostPort = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(text);
  if (!hostPort) throw new Error(`${text} is not a host, host:port or CIDR`);
  return { host: hostPort[1]!.toLowerCase(), port: hostPort[2] ? Number(hostPort[2]) : undefined };
}

export interface Endpoint {
  host: string;
  port: number;
}

export type AddressVerdict =
  | { allowed: true; address: string; family: 4 | 6 }
  | {
      allowed: false;
      /**
       * What a team is told (an API answer, a delivery log, a run's transcript): the same words
       * whether the address is private, the platform's own or does not resolve, so that nobody
       * maps the platform's network or its DNS through refusals.
       */
      reason: string;
      /** Why, for the operator's log only. */
      detail: string;
      kind: RefusalKind;
    };

/** The one refusal a team is told, for `host:port`. */
export function refusedAddress(host: string, port: number): string {
  return `${host}:${port} is not a public address this service may connect to`;
}

function refusal(host: string, port: number, kind: RefusalKind, detail: string): AddressVerdict {
  return { allowed: false, reason: refusedAddress(host, port), detail, kind };
}

export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

/** How long a name may take to resolve before the connection is refused. */
const RESOLVE_TIMEOUT_MS = 5000;

/**
 * Resolves with c-ares against the system's name servers, with a deadline, never through
 * getaddrinfo: a name whose name server never answers would otherwise hold one of the few
 * threads of libuv's pool and stall every lookup of the worker. `localhost` names are loopback
 * (RFC 6761) without asking anyone.
 */
export function boundedLookup(nameServers?: string[]): Lookup {
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  if (nameServers) resolver.setServers(nameServers);
  return async (host) => {
    const name = host.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) {
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    }
    const settle = (p: Promise<string[]>) => p.catch((err: Error) => err);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error('lookup timed out'), { code: 'ETIMEOUT' })),
        RESOLVE_TIMEOUT_MS,
      );
    });
    try {
      const [v4, v6] = await Promise.race([
        Promise.all([settle(resolver.resolve4(name)), settle(resolver.resolve6(name))]),
        deadline,
      ]);
      const found = [
        ...(Array.isArray(v4) ? v4.map((address) => ({ address, family: 4 })) : []),
        ...(Array.isArray(v6) ? v6.map((address) => ({ address, family: 6 })) : []),
      ];
      if (!found.length) throw v4 instanceof Error ? v4 : (v6 as Error);
      return found;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The system resolver (hosts file included): only for the names an operator listed as allowed. */
const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Decides which addresses outbound connections may go to, and resolves names under those rules. */
export class OutboundAddressRules {
  private readonly allowedPrivate: HostRule[];
  private readonly platform: { address: string; port: number }[] = [];

  private readonly lookup: Lookup;

  /**
   * @param allowedPrivateHosts operator-listed private hosts (`host`, `host:port`, CIDR)
   * @param lookup name resolution; by default c-ares with a deadline, and the system resolver
   *   (hosts file included) for names the operator listed
   */
  constructor(allowedPrivateHosts: string[], lookup?: Lookup) {
    this.allowedPrivate = allowedPrivateHosts.map(parseHostRule);
    if (lookup) {
      this.lookup = lookup;
    } else {
      const listed = new Set(this.allowedPrivate.flatMap((r) => (r.host === undefined ? [] : [r.host])));
      const bounded = boundedLookup();
      this.lookup = (host) => (listed.has(host.toLowerCase()) ? systemLookup(host) : bounded(host));
    }
  }

  /** Adds the platform's own endpoints (database, Temporal, API): refused even when listed as allowed. */
  async addPlatformEndpoints(endpoints: Endpoint[]): Promise<void> {
    for (const { host, port } of endpoints) {
      const addresses = isIP(host) ? [{ address: host }] : await this.lookup(host).catch(() => []);
      for (const { address } of addresses) this.platform.push({ address: normalise(address), port });
    }
  }

  /** Checks one resolved address for a connection to `host:port`. */
  checkAddress(host: string, address: string, port: number): AddressVerdict {
    const ip = normalise(address);
    const family = isIP(ip) as 4 | 6;
    if (!family) return refusal(host, port, 'other', `${address} is not an IP address`);
    if (this.platform.some((p) => p.address === ip && p.port === port)) {
      return refusal(host, port, 'platform_endpoint', `${host}:${port} is one of the platform's own services`);
    }
    if (isPublicAddress(ip)) return { allowed: true, address: ip, family };
    if (this.isAllowedPrivate(host.toLowerCase(), ip, port)) return { allowed: true, address: ip, family };
    return refusal(
      host,
      port,
      'private_address',
      `${host}${host === ip ? '' : ` (${ip})`} is a loopback, private or link-local address`,
    );
  }

  /** Resolves `host` and returns the first address a connection may use, or why none may be used. */
  async resolve(host: string, port: number): Promise<AddressVerdict> {
    const bare = host.replace(/^\[|\]$/g, '');
    if (isIP(bare)) return this.checkAddress(bare, bare, port);
    let addresses: { address: string }[];
    try {
      addresses = await this.lookup(bare);
    } catch (err) {
      return refusal(
        bare,
        port,
        'unresolvable',
        `${bare} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    let refused: AddressVerdict | undefined;
    for (const { address } of addresses) {
      const verdict = this.checkAddress(bare, address, port);
      if (verdict.allowed) return verdict;
      refused ??= verdict;
    }
    return refused ?? refusal(bare, port, 'unresolvable', `${bare} has no addresses`);
  }

  private isAllowedPrivate(host: string, ip: string, port: number): boolean {
    return this.allowedPrivate.some((rule) => {
      if (rule.port !== undefined && rule.port !== port) return false;
      if (rule.subnet) return rule.subnet.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
      return rule.host === host || (isIP(rule.host!) !== 0 && normalise(rule.host!) === ip);
    });
  }
}

/**
 * One spelling per address: an IPv6 address that carries an IPv4 one (mapped, compatible, SIIT,
 * NAT64, 6to4), however written, is that IPv4 address; other IPv6 addresses are written out in
 * full. Comparisons then cannot be dodged with another spelling of the same address.
 */
export function normalise(address: string): string {
  const bare = address
    .replace(/^\[|\]$/g, '')
    .split('%')[0]!
    .toLowerCase();
  if (isIP(bare) !== 6) return bare;
  return (
    embeddedV4(bare) ??
    expandV6(bare)!
      .map((w) => w.toString(16))
      .join(':')
  );
}

/** `host` and `port` of a `host:port` string or URL, for the platform endpoint list. */
export function endpointOf(hostPort: string, defaultPort: number): Endpoint | undefined {
  try {
    const url = new URL(hostPort.includes('://') ? hostPort : `tcp://${hostPort}`);
    const port = url.port ? Number(url.port) : defaultPort;
    return { host: url.hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return undefined;
  }
}
