import { createCipheriv, randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../core/config';
import {
  decryptMcpServers,
  decryptSecret,
  encryptMcpServers,
  encryptMcpServersKeepingRedacted,
  encryptSecret,
  keyUse,
  REDACTED,
  redactMcpServers,
  reencryptSecret,
  SecretDecryptionError,
} from '../../core/secrets';
import {
  fingerprintId,
  keyringOf,
  parseSecretsKey,
  parseSecretsKeyring,
  type SecretsKeyring,
} from '../../core/secrets-keyring';
import {
  idempotencyView,
  idempotencyViews,
  maskSecrets,
  redactRunConfig,
  runSecretValues,
} from '../../core/run-secrets';
import type { McpServerConfig } from '../../core/run-types';

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const ringA: SecretsKeyring = { keys: [{ id: 'a', key: keyA }] };
const ringBA: SecretsKeyring = {
  keys: [
    { id: 'b', key: keyB },
    { id: 'a', key: keyA },
  ],
};
const ringB: SecretsKeyring = { keys: [{ id: 'b', key: keyB }] };
const key = ringA;

/** What encryptSecret wrote before keys had ids: `enc:v1:<base64url(iv | tag | ciphertext)>`, no additional data. */
function legacyV1(value: string, raw: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', raw, iv);
  const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
  return `enc:v1:${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
}

/** The error `fn` throws (or a failure of the test when it throws none). */
function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

describe('parseSecretsKey', () => {
  test('takes 32 bytes as base64 (44 characters) or hex (64), around white space', () => {
    expect(parseSecretsKey(keyA.toString('base64'))).toEqual(keyA);
    expect(parseSecretsKey(` ${keyA.toString('hex')}\n`)).toEqual(keyA);
    expect(parseSecretsKey(keyA.toString('hex').toUpperCase())).toEqual(keyA);
  });

  test('refuses anything else, saying how to make a key and never repeating the value', () => {
    const wrong = [
      randomBytes(16).toString('base64'),
      randomBytes(31).toString('hex'),
      keyA.toString('base64url'),
      `${keyA.toString('base64').slice(0, -1)}`,
      'hunter2-hunter2-hunter2-hunter2-hunter2-hunt',
      '',
    ];
    for (const value of wrong) {
      const { message } = errorOf(() => parseSecretsKey(value));
      expect(message).toMatch(/^SECRETS_ENCRYPTION_KEY must be 32 random bytes .*`openssl rand -base64 32`\.$/);
      if (value) expect(message).not.toContain(value);
    }
  });
});

describe('the keyring', () => {
  const b64 = (k: Buffer) => k.toString('base64');

  test('SECRETS_ENCRYPTION_KEYS: <id>=<key> entries, newest first, base64 or hex', () => {
    const ring = parseSecretsKeyring(` 2026-12=${b64(keyB)} , 2026_06=${keyA.toString('hex')},`);
    expect(ring.keys).toEqual([
      { id: '2026-12', key: keyB },
      { id: '2026_06', key: keyA },
    ]);
  });

  test('a bad entry is refused, named by its position or id, never by its key', () => {
    const cases: [string, RegExp][] = [
      ['', /at least one `<id>=<key>` entry/],
      [b64(keyA), /entry 1 must be `<id>=<key>`/],
      [`a=${b64(keyA)},=${b64(keyB)}`, /entry 2 must be `<id>=<key>`/],
      [`a b=${b64(keyA)}`, /entry 1 must be `<id>=<key>`/],
      [`${'x'.repeat(33)}=${b64(keyA)}`, /entry 1 must be `<id>=<key>`/],
      [`a=${b64(keyA).slice(0, 40)}`, /entry 1 \("a"\) must be 32 random bytes/],
      [`a=${b64(keyA)},a=${b64(keyB)}`, /the id "a" is given twice/],
      [`a=${b64(keyA)},b=${keyA.toString('hex')}`, /"a" and "b" are the same key/],
      [`fp-0123456789ab=${b64(keyA)}`, /"fp-0123456789ab" is not its key's/],
    ];
    for (const [text, message] of cases) {
      const error = errorOf(() => parseSecretsKeyring(text));
      expect([text, error.message]).toEqual([text, expect.stringMatching(message)]);
      for (const k of [keyA, keyB]) {
        expect(error.message).not.toContain(b64(k).slice(0, 40));
        expect(error.message).not.toContain(k.toString('hex'));
      }
    }
    // A key's own fingerprint is its id already: writing it out is allowed.
    expect(parseSecretsKeyring(`${fingerprintId(keyA)}=${b64(keyA)}`).keys[0].id).toBe(fingerprintId(keyA));
  });

  test("loadConfig: SECRETS_ENCRYPTION_KEY alone is a ring of one, its id the key's fingerprint", () => {
    const ring = loadConfig({ SECRETS_ENCRYPTION_KEY: b64(keyA) }).secretsKeyring!;
    expect(ring).toEqual(keyringOf(keyA));
    expect(ring.keys[0].id).toMatch(/^fp-[0-9a-f]{12}$/);
    expect(fingerprintId(keyA)).toBe(ring.keys[0].id);
    expect(fingerprintId(keyB)).not.toBe(ring.keys[0].id);
    expect(loadConfig({}).secretsKeyring).toBeUndefined();
  });

  test("loadConfig: both variables only when SECRETS_ENCRYPTION_KEY is one of the ring's keys", () => {
    const keys = `b=${b64(keyB)},a=${b64(keyA)}`;
    expect(loadConfig({ SECRETS_ENCRYPTION_KEYS: keys }).secretsKeyring).toEqual(ringBA);
    expect(loadConfig({ SECRETS_ENCRYPTION_KEYS: keys, SECRETS_ENCRYPTION_KEY: b64(keyA) }).secretsKeyring).toEqual(
      ringBA,
    );
    const other = randomBytes(32);
    const error = errorOf(() => loadConfig({ SECRETS_ENCRYPTION_KEYS: keys, SECRETS_ENCRYPTION_KEY: b64(other) }));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(
      /SECRETS_ENCRYPTION_KEY is set beside SECRETS_ENCRYPTION_KEYS but is none of its keys/,
    );
    const bad = errorOf(() => loadConfig({ SECRETS_ENCRYPTION_KEYS: `a=${b64(other).slice(1)}` }));
    expect(bad).toBeInstanceOf(ConfigError);
    expect(bad.message).toMatch(
      /^Invalid configuration:\n {2}SECRETS_ENCRYPTION_KEYS: entry 1 \("a"\) must be 32 random bytes/,
    );
    for (const e of [error, bad]) expect(e.message).not.toContain(b64(other).slice(1, 40));
  });
});

describe('encryptSecret and decryptSecret', () => {
  test('round trip under the newest key, whose id the value carries, with a fresh IV each time', () => {
    for (const value of ['', 'token', 'Bearer sk-ünïcødé-😀', 'x'.repeat(10_000)]) {
      const stored = encryptSecret(value, ringBA);
      expect(stored).toMatch(/^enc:v2:b:[A-Za-z0-9_-]+$/);
      expect(stored).not.toContain(value || 'never');
      expect(decryptSecret(stored, ringBA)).toBe(value);
      expect(decryptSecret(stored, ringB)).toBe(value);
    }
    expect(encryptSecret('same', ringA)).not.toBe(encryptSecret('same', ringA));
  });

  test('after a rotation every key of the ring still decrypts what it encrypted', () => {
    const underA = encryptSecret('old secret', ringA);
    expect(underA).toMatch(/^enc:v2:a:/);
    expect(decryptSecret(underA, ringBA)).toBe('old secret');
  });

  test('a key removed too early: the error names its id, never a value', () => {
    const underA = encryptSecret('old secret', ringA);
    const error = errorOf(() => decryptSecret(underA, ringB));
    expect(error).toBeInstanceOf(SecretDecryptionError);
    expect(error).toMatchObject({ failure: 'missing_key' });
    expect(error.message).toMatch(/under the key "a", which is not among the configured keys \(b\)/);
    expect(error.message).not.toContain('old secret');
    expect(error.message).not.toContain(underA.slice('enc:v2:a:'.length));
  });

  test('enc:v1 values (no key id) are opened by whichever key of the ring opens them', () => {
    const legacy = legacyV1('from before ids', keyA);
    expect(decryptSecret(legacy, ringA)).toBe('from before ids');
    expect(decryptSecret(legacy, ringBA)).toBe('from before ids');
    expect(errorOf(() => decryptSecret(legacy, ringB))).toMatchObject({
      failure: 'missing_key',
      message: expect.stringMatching(/no configured key \(b\) opens this enc:v1 value/),
    });
  });

  test('a value stored under a lone key (its fingerprint id) is read once that key joins a ring under a name', () => {
    const stored = encryptSecret('lone', keyringOf(keyA));
    expect(stored.startsWith(`enc:v2:${fingerprintId(keyA)}:`)).toBe(true);
    expect(decryptSecret(stored, ringBA)).toBe('lone');
  });

  test('a value stored before encryption existed is returned as it is', () => {
    expect(decryptSecret('plain-old-token', ringA)).toBe('plain-old-token');
  });

  test('attack: a value relabelled with another key id does not decrypt', () => {
    // Under B, claiming A (in the ring), an alias of B, or an id no key has: none opens it.
    const underB = encryptSecret('secret value', ringBA);
    const body = underB.slice('enc:v2:b:'.length);
    const relabelled = [`enc:v2:a:${body}`, `enc:v2:${fingerprintId(keyB)}:${body}`, `enc:v2:zz:${body}`];
    for (const value of relabelled) {
      expect(errorOf(() => decryptSecret(value, ringBA))).toBeInstanceOf(SecretDecryptionError);
    }
    // Nor does an enc:v1 label (no additional data) open a v2 body.
    expect(errorOf(() => decryptSecret(`enc:v1:${body}`, ringBA))).toMatchObject({ failure: 'missing_key' });
    // Under A, relabelled as B: B's key does not authenticate it.
    const underA = encryptSecret('secret value', ringA);
    expect(errorOf(() => decryptSecret(underA.replace('enc:v2:a:', 'enc:v2:b:'), ringBA))).toMatchObject({
      failure: 'altered',
      message: expect.stringMatching(/altered since it was stored under the key "b"/),
    });
  });

  test('any altered byte is an error rather than a wrong value', () => {
    const stored = encryptSecret('secret value', ringA);
    const raw = Buffer.from(stored.slice('enc:v2:a:'.length), 'base64url');
    // IV, tag and ciphertext: each byte matters.
    for (const index of [0, 11, 12, 27, 28, raw.length - 1]) {
      const tampered = Buffer.from(raw);
      tampered[index] = tampered[index]! ^ 0x01;
      expect(() => decryptSecret(`enc:v2:a:${tampered.toString('base64url')}`, ringA)).toThrow(/altered since/);
    }
    expect(() => decryptSecret('enc:v2:a b:AAAA', ringA)).toThrow(/malformed/);
  });

  test('a truncated value says so', () => {
    expect(() => decryptSecret(`enc:v2:a:${randomBytes(27).toString('base64url')}`, ringA)).toThrow(
      'Cannot decrypt a stored secret: the value is truncated.',
    );
    expect(() => decryptSecret(`enc:v1:${randomBytes(27).toString('base64url')}`, ringA)).toThrow(
      'Cannot decrypt a stored secret: the value is truncated.',
    );
  });
});

describe('re-encryption and key use', () => {
  test('reencryptSecret puts a value under the newest key; one already there is the same string', () => {
    const underA = encryptSecret('s', ringA);
    const legacy = legacyV1('v', keyA);
    for (const [value, plain] of [
      [underA, 's'],
      [legacy, 'v'],
      ['plain', 'plain'],
    ] as const) {
      const sealed = reencryptSecret(value, ringBA);
      expect(sealed).toMatch(/^enc:v2:b:/);
      expect(decryptSecret(sealed, ringB)).toBe(plain);
    }
    const underB = encryptSecret('t', ringBA);
    expect(reencryptSecret(underB, ringBA)).toBe(underB);
    expect(errorOf(() => reencryptSecret(underA, ringB))).toMatchObject({ failure: 'missing_key' });
  });

  test('keyUse names the key a value needs: an enc:v1 value the one that opens it', () => {
    expect(keyUse(encryptSecret('s', ringA), ringBA)).toEqual({ kind: 'ring', key: ringBA.keys[1] });
    expect(keyUse(legacyV1('v', keyA), ringBA)).toEqual({ kind: 'ring', key: ringBA.keys[1] });
    expect(keyUse(encryptSecret('s', keyringOf(keyB)), ringBA)).toEqual({ kind: 'ring', key: ringBA.keys[0] });
    expect(keyUse('plain', ringBA)).toEqual({ kind: 'plaintext' });
    expect(keyUse(encryptSecret('s', ringA), ringB)).toEqual({ kind: 'missing', keyId: 'a' });
    expect(keyUse(legacyV1('v', keyA), ringB)).toEqual({ kind: 'missing' });
  });
});

describe('MCP server credentials', () => {
  const servers: Record<string, McpServerConfig> = {
    github: { command: 'gh-mcp', args: ['--stdio'], env: { GITHUB_TOKEN: 'ghp_secret123' } },
    search: { url: 'https://mcp.example.com', headers: { Authorization: 'Bearer sk-search-456' } },
    plain: { command: 'local-mcp' },
  };

  test('env and headers values are encrypted, names, keys and other fields kept; decrypting restores them', () => {
    const stored = encryptMcpServers(servers, key);
    expect(stored.github).toMatchObject({ command: 'gh-mcp', args: ['--stdio'] });
    expect(stored.github!.env!.GITHUB_TOKEN).toMatch(/^enc:v2:a:/);
    expect(stored.search!.headers!.Authorization).toMatch(/^enc:v2:a:/);
    expect(stored.plain).toEqual({ command: 'local-mcp' });
    expect(JSON.stringify(stored)).not.toMatch(/ghp_secret123|sk-search-456/);
    expect(decryptMcpServers(stored, key)).toEqual(servers);
    expect(encryptMcpServers(undefined, key)).toBeUndefined();
  });

  test('responses show every value as "***"', () => {
    expect(redactMcpServers(servers)).toEqual({
      github: { command: 'gh-mcp', args: ['--stdio'], env: { GITHUB_TOKEN: REDACTED } },
      search: { url: 'https://mcp.example.com', headers: { Authorization: REDACTED } },
      plain: { command: 'local-mcp' },
    });
    const config = { model_id: 'openai/gpt-4o', idle_timeout_minutes: 10 };
    expect(redactRunConfig({ ...config, mcp_servers: servers })).toEqual({
      ...config,
      mcp_servers: redactMcpServers(servers),
    });
    expect(redactRunConfig(config)).toBe(config);
  });

  test('an update may send "***" back to keep a stored value, but not for a value never stored', () => {
    const stored = encryptMcpServers(servers, key);
    const update = {
      github: { command: 'gh-mcp', env: { GITHUB_TOKEN: REDACTED, EXTRA: 'new-value' } },
      search: servers.search!,
    };
    const kept = encryptMcpServersKeepingRedacted(update, stored, key);
    if (!('servers' in kept)) throw new Error(`unexpected unknown mask ${kept.unknownMask}`);
    expect(kept.servers.github!.env!.GITHUB_TOKEN).toBe(stored.github!.env!.GITHUB_TOKEN);
    expect(decryptMcpServers(kept.servers, key)).toEqual({
      github: { command: 'gh-mcp', env: { GITHUB_TOKEN: 'ghp_secret123', EXTRA: 'new-value' } },
      search: servers.search,
    });

    const unknown = { search: { url: 'https://mcp.example.com', headers: { 'X-Key': REDACTED } } };
    expect(encryptMcpServersKeepingRedacted(unknown, stored, key)).toEqual({ unknownMask: 'search.headers.X-Key' });
  });

  test("a run's secret values, and a bearer's token alone, longest first; short and altered ones left out", () => {
    const stored: Record<string, McpServerConfig> = encryptMcpServers(
      { ...servers, short: { command: 'x', env: { LEVEL: 'warn' } } },
      ringBA,
    );
    stored.plain = { command: 'y', env: { OLD: 'plaintext-old' } };
    stored.older = { command: 'w', env: { T: encryptSecret('under-the-older-key', ringA) } };
    // Altered since stored: no worker could have used it, so nothing can show it.
    const altered = encryptSecret('altered-value', ringBA);
    stored.altered = { command: 'z', env: { T: altered.slice(0, -2) + (altered.endsWith('AA') ? 'BB' : 'AA') } };
    expect(runSecretValues({ model_id: 'm', idle_timeout_minutes: 10, mcp_servers: stored }, ringBA)).toEqual([
      'Bearer sk-search-456',
      'under-the-older-key',
      'ghp_secret123',
      'sk-search-456',
      'plaintext-old',
    ]);
  });

  test("a run's secret under a key no longer configured is an error naming it, not a value shown unmasked", () => {
    const stored = encryptMcpServers(servers, ringA);
    expect(() => runSecretValues({ model_id: 'm', idle_timeout_minutes: 10, mcp_servers: stored }, ringB)).toThrow(
      /under the key "a", which is not among the configured keys \(b\)/,
    );
  });

  test('maskSecrets replaces every occurrence in strings at any depth, and keeps Dates', () => {
    const at = new Date('2025-01-01T00:00:00Z');
    const secrets = ['Bearer sk-search-456', 'sk-search-456'];
    const masked = maskSecrets(
      { text: 'sent Bearer sk-search-456, then sk-search-456', nested: [{ v: 'sk-search-456!' }], at, n: 3 },
      secrets,
    );
    expect(masked).toEqual({ text: 'sent ***, then ***', nested: [{ v: '***!' }], at, n: 3 });
    expect(masked.at).toBe(at);
    const value = { a: 'sk-search-456' };
    expect(maskSecrets(value, [])).toBe(value);
  });

  test('the idempotency hash sees a keyed HMAC of each credential, never the credential', () => {
    const body = { prompt: 'p', config: { mcp_servers: servers } };
    const view = idempotencyView(body, keyA);
    const token = view.config!.mcp_servers!.github!.env!.GITHUB_TOKEN!;
    expect(token).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(view)).not.toMatch(/ghp_secret123|sk-search-456/);
    // The same body and key give the same view (so a retry matches); another key another one.
    expect(idempotencyView(body, keyA)).toEqual(view);
    expect(idempotencyView(body, keyB).config!.mcp_servers!.github!.env!.GITHUB_TOKEN).not.toBe(token);
    expect(view.config!.mcp_servers!.plain).toEqual({ command: 'local-mcp' });
    expect(idempotencyView({ prompt: 'p' }, keyA)).toEqual({ prompt: 'p' });
  });

  test('a retry across a rotation still matches: a view under each key of the ring, newest first', () => {
    const body = { prompt: 'p', config: { mcp_servers: servers } };
    expect(idempotencyViews(body, ringBA)).toEqual([idempotencyView(body, keyB), idempotencyView(body, keyA)]);
  });
});
