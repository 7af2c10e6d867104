import { describePolicy, parseNetworkPolicyText, policyAllowsHost } from '../../core/network-policy';
import { createSocket } from 'node:dgram';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isNativeError } from 'node:util/types';
import { boundedLookup, isPublicAddress, OutboundAddressRules, type Lookup } from '../../core/outbound-addresses';

test('only public unicast addresses count as public, whatever their spelling', () => {
  for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
    expect([ip, isPublicAddress(ip)]).toEqual([ip, true]);
  const blocked = [
    '127.0.0.1',
    '127.1.2.3',
    '10.0.0.5',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    'fc00::abcd',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::',
    '::ffff:0:7f00:1',
    '0:0:0:0:0:ffff:7f00:1',
    '64:ff9b:1::1',
    'not-an-ip',
  ];
  for (const ip of blocked) expect([ip, isPublicAddress(ip)]).toEqual([ip, false]);
});

test('names are resolved by the rules, and a name that resolves to a private address is refused', async () => {
  const dns: Record<string, string[]> = {
    'rebind.example.com': ['127.0.0.1'],
    'mixed.example.com': ['10.0.0.1', '93.184.216.34'],
    'public.example.com': ['93.184.216.34'],
    'db.internal': ['10.1.2.3'],
  };
  const lookup: Lookup = async (host) => {
    const found = dns[host];
    if (!found) throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: 4 }));
  };
  const rules = new OutboundAddressRules(['mcp.internal:8443', '10.9.0.0/16', '127.0.0.1:7000'], lookup);
  await rules.addPlatformEndpoints([
    { host: 'db.internal', port: 5432 },
    { host: '127.0.0.1', port: 7000 },
  ]);
  expect(await rules.resolve('rebind.example.com', 443)).toMatchObject({ allowed: false });
  expect(await rules.resolve('mixed.example.com', 443)).toEqual({ allowed: true, address: '93.184.216.34', family: 4 });
  expect(await rules.resolve('public.example.com', 80)).toMatchObject({ allowed: true });
  expect(await rules.resolve('nowhere.example.com', 80)).toMatchObject({
    allowed: false,
    detail: expect.stringContaining('ENOTFOUND'),
  });
  expect(await rules.resolve('10.9.3.4', 80)).toMatchObject({ allowed: true });
  expect(await rules.resolve('10.8.3.4', 80)).toMatchObject({ allowed: false });
  // An operator's entry never opens the platform's own services.
  expect(await rules.resolve('127.0.0.1', 7000)).toMatchObject({
    allowed: false,
    detail: expect.stringContaining("platform's own"),
  });
  expect(await rules.resolve('[::ffff:127.0.0.1]', 7000)).toMatchObject({ allowed: false });
  expect(await rules.resolve('db.internal', 5432)).toMatchObject({ allowed: false });
  // However the platform's address is spelled, it is the platform's.
  const cidr = new OutboundAddressRules(['10.0.0.0/8'], lookup);
  await cidr.addPlatformEndpoints([{ host: '10.0.0.5', port: 5432 }]);
  for (const spelling of ['10.0.0.5', '::ffff:a00:5', '0:0:0:0:0:ffff:a00:5', '0::ffff:a00:5', '0:0::ffff:10.0.0.5']) {
    expect([spelling, await cidr.resolve(spelling, 5432)]).toEqual([
      spelling,
      expect.objectContaining({ allowed: false, detail: expect.stringContaining("platform's own") }),
    ]);
  }
  expect(await cidr.resolve('[0:0:0:0:0:ffff:a00:6]', 5432)).toEqual({ allowed: true, address: '10.0.0.6', family: 4 });
});

test('network policies: text form, domain matching, description', () => {
  expect(parseNetworkPolicyText('open')).toBe('open');
  expect(parseNetworkPolicyText(' NONE ')).toBe('none');
  expect(parseNetworkPolicyText('github.com, *.npmjs.org')).toEqual({ allowed_domains: ['github.com', '*.npmjs.org'] });
  expect(String(parseNetworkPolicyText('github.com, 10.0.0.1'))).toMatch(/^!.*bad: 10\.0\.0\.1/);
  const policy = { allowed_domains: ['github.com', '*.npmjs.org'] };
  expect(policyAllowsHost(policy, 'github.com')).toBe(true);
  expect(policyAllowsHost(policy, 'api.github.com')).toBe(false);
  expect(policyAllowsHost(policy, 'registry.npmjs.org')).toBe(true);
  expect(policyAllowsHost(policy, 'npmjs.org')).toBe(false);
  expect(policyAllowsHost(policy, 'evilnpmjs.org')).toBe(false);
  expect(policyAllowsHost('none', 'github.com')).toBe(false);
  expect(describePolicy(policy)).toContain('*.npmjs.org');
});

/** A UDP name server on loopback that never answers, for the lifetime of `use`. */
async function withSilentNameServer(use: (address: string) => Promise<void>): Promise<void> {
  const silent = createSocket('udp4');
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  try {
    await use(`127.0.0.1:${silent.address().port}`);
  } finally {
    silent.close();
  }
}

/** `code: message` of what a lookup rejected with (isNativeError: c-ares' errors are of Node's realm, not jest's). */
function failure(e: unknown): string {
  return isNativeError(e) ? `${(e as NodeJS.ErrnoException).code}: ${e.message}` : `not an error: ${String(e)}`;
}

test('a name server that never answers stalls no other lookup', async () => {
  await withSilentNameServer(async (server) => {
    const lookup = boundedLookup({ nameServers: [server] });
    let stuckSettled = false;
    const stuck = Promise.all(
      Array.from({ length: 64 }, (_, i) => lookup(`n${i}.never-answers.test`).catch((e: unknown) => e)),
    ).finally(() => (stuckSettled = true));
    // Meanwhile other names are still answered, long before any of the stuck ones gives up.
    expect(await lookup('localhost')).toContainEqual({ address: '127.0.0.1', family: 4 });
    // ...and the system resolver's thread pool (file system, getaddrinfo) is not held up.
    expect((await dnsLookup('localhost')).address).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(stuckSettled).toBe(false);
    // They fail as timeouts: the deadline's, or c-ares' own where a loaded machine runs it first.
    const codes = new Set(((await stuck) as unknown[]).map((e) => failure(e).split(':')[0]));
    expect([...codes].filter((code) => !['ETIMEOUT', 'ECONNREFUSED'].includes(code!))).toEqual([]);
  });
});

test("a name server that never answers costs a lookup its deadline, before c-ares' own tries end", async () => {
  await withSilentNameServer(async (server) => {
    // c-ares alone would give up after 6 s (2 s, then 4 s): the deadline ends each lookup first.
    const lookup = boundedLookup({ nameServers: [server], deadlineMs: 300 });
    const errors = await Promise.all(
      Array.from({ length: 16 }, (_, i) => lookup(`d${i}.never-answers.test`).catch((e: unknown) => e)),
    );
    expect(new Set(errors.map(failure))).toEqual(new Set(['ETIMEOUT: lookup timed out']));
  });
});
