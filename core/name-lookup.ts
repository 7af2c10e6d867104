import { lookup as dnsLookup, Resolver } from 'node:dns/promises';

/** How the rules of core/outbound-addresses.ts resolve names. */

export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

/** How long a name may take to resolve before the connection is refused. */
const RESOLVE_TIMEOUT_MS = 5000;

/**
 * Resolves with c-ares against the system's name servers, with a deadline, never through
 * getaddrinfo: a name whose name server never answers would otherwise hold one of the few
 * threads of libuv's pool and stall every lookup of the worker. `localhost` names are loopback
 * (RFC 6761) without asking anyone.
 */
export function boundedLookup(options: { nameServers?: string[]; deadlineMs?: number } = {}): Lookup {
  const { nameServers, deadlineMs = RESOLVE_TIMEOUT_MS } = options;
  // c-ares' own tries (2 s, then 4 s) end after the deadline: the deadline decides.
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
      timer = setTimeout(() => reject(Object.assign(new Error('lookup timed out'), { code: 'ETIMEOUT' })), deadlineMs);
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
export const systemLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });
