import { BlockList, isIP } from 'node:net';
import type { RefusalKind } from './metrics';
import { boundedLookup, systemLookup, type Lookup } from './name-lookup';
import { isPublicAddress, normalise } from './public-addresses';

/**
 * Rules for connections the platform makes on a caller's behalf (the sandbox egress proxy, MCP
 * servers over HTTP, webhooks): public addresses only, minus the platform's own endpoints, plus
 * the private hosts an operator lists. Names are resolved here and the connection goes to the
 * address that was checked, so DNS tricks (rebinding, a name for 127.0.0.1) do not get around it.
 */

export { boundedLookup, type Lookup } from './name-lookup';
export { isPublicAddress, normalise } from './public-addresses';

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
    const verdicts = await this.verdicts(host, port);
    return verdicts.find((v) => v.allowed) ?? verdicts[0] ?? noAddresses(host, port);
  }

  /**
   * Like `resolve`, but every address the name has must be allowed: for connections another
   * program makes after resolving the name itself (it may pick any of them).
   */
  async resolveEvery(host: string, port: number): Promise<AddressVerdict> {
    const verdicts = await this.verdicts(host, port);
    return verdicts.find((v) => !v.allowed) ?? verdicts[0] ?? noAddresses(host, port);
  }

  /** One verdict per address `host` resolves to (one refusal when it does not resolve). */
  private async verdicts(host: string, port: number): Promise<AddressVerdict[]> {
    const bare = host.replace(/^\[|\]$/g, '');
    if (isIP(bare)) return [this.checkAddress(bare, bare, port)];
    try {
      return (await this.lookup(bare)).map(({ address }) => this.checkAddress(bare, address, port));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      return [refusal(bare, port, 'unresolvable', `${bare} does not resolve (${code})`)];
    }
  }

  private isAllowedPrivate(host: string, ip: string, port: number): boolean {
    return this.allowedPrivate.some((rule) => {
      if (rule.port !== undefined && rule.port !== port) return false;
      if (rule.subnet) return rule.subnet.check(ip, isIP(ip) === 4 ? 'ipv4' : 'ipv6');
      return rule.host === host || (isIP(rule.host!) !== 0 && normalise(rule.host!) === ip);
    });
  }
}

function noAddresses(host: string, port: number): AddressVerdict {
  const bare = host.replace(/^\[|\]$/g, '');
  return refusal(bare, port, 'unresolvable', `${bare} has no addresses`);
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
